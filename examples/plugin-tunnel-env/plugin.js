// A tunnel detector (docs/plugins/hooks.md, tunnel): present when PUBLIC_URL holds an http(s) URL,
// for a host behind a reverse proxy or port forward that pynchy cannot see for itself.
// `pynchy status` and `pynchy doctor` show the first present tunnel's URL.
export default {
  name: "tunnel-env",
  version: "0.1.0",
  description: "Reports PUBLIC_URL as this host's public address.",
  tunnel: () => ({
    name: "public-url",
    detect: async () => {
      const url = process.env.PUBLIC_URL ?? ""
      if (url === "") return { present: false, detail: "PUBLIC_URL is not set" }
      if (!/^https?:\/\//.test(url)) return { present: false, detail: "PUBLIC_URL is not an http(s) URL" }
      return { present: true, url, detail: "from PUBLIC_URL" }
    }
  })
}
