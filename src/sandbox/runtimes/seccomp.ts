/**
 * The seccomp filter bwrap loads for the sandbox (`--seccomp FD`): a classic-BPF program built here,
 * so nothing is downloaded or compiled at setup. It allows everything except kernel surfaces an
 * agent has no use for and that have a history of privilege escalations:
 *   - keyctl, add_key, request_key: EPERM (the kernel keyrings of the host's user);
 *   - io_uring_setup/enter/register: ENOSYS, so libuv falls back to its thread pool;
 *   - perf_event_open, bpf, userfaultfd: EPERM;
 *   - personality: EPERM except the query (0xffffffff) and PER_LINUX (0);
 *   - socket(AF_NETLINK | AF_VSOCK, ...): EAFNOSUPPORT.
 * Another architecture than the host's (i386 on x86_64, arm32 on aarch64) kills the process: its
 * syscall numbers would slip past the filter. x86_64's x32 numbers (bit 30) get ENOSYS.
 */

interface ArchTable {
  readonly audit: number
  readonly x32: boolean
  readonly nr: {
    readonly keyctl: number
    readonly add_key: number
    readonly request_key: number
    readonly perf_event_open: number
    readonly bpf: number
    readonly userfaultfd: number
    readonly personality: number
    readonly socket: number
    readonly io_uring_setup: number
    readonly io_uring_enter: number
    readonly io_uring_register: number
  }
}

/** Syscall numbers from the kernel's tables (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h). */
export const ARCHES: Readonly<Record<string, ArchTable>> = {
  x64: {
    audit: 0xc000003e,
    x32: true,
    nr: { keyctl: 250, add_key: 248, request_key: 249, perf_event_open: 298, bpf: 321, userfaultfd: 323, personality: 135, socket: 41, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427 }
  },
  arm64: {
    audit: 0xc00000b7,
    x32: false,
    nr: { keyctl: 219, add_key: 217, request_key: 218, perf_event_open: 241, bpf: 280, userfaultfd: 282, personality: 92, socket: 198, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427 }
  }
}

const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const RET_K = 0x06
const RET_KILL_PROCESS = 0x80000000
const RET_ALLOW = 0x7fff0000
const retErrno = (errno: number) => 0x00050000 | (errno & 0xffff)
const EPERM = 1
const ENOSYS = 38
const EAFNOSUPPORT = 97
const AF_NETLINK = 16
const AF_VSOCK = 40
// struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (the low half on little-endian).
const NR = 0
const ARCH = 4
const ARG0_LO = 16

type Insn = readonly [code: number, jt: number, jf: number, k: number]

const ld = (offset: number): Insn => [LD_W_ABS, 0, 0, offset]
const ret = (k: number): Insn => [RET_K, 0, 0, k >>> 0]
const jeq = (k: number, jt: number, jf: number): Insn => [JEQ_K, jt, jf, k >>> 0]

/** The filter as `struct sock_filter[]` bytes (what bwrap reads), or undefined for an arch without a table. */
export const seccompProgram = (arch: string = process.arch): Buffer | undefined => {
  const t = ARCHES[arch]
  if (t === undefined) return undefined
  const insns: Array<Insn> = [ld(ARCH), jeq(t.audit, 1, 0), ret(RET_KILL_PROCESS), ld(NR)]
  if (t.x32) insns.push([JGE_K, 0, 1, 0x40000000], ret(retErrno(ENOSYS)))
  const deny = (nr: number, action: number) => insns.push(jeq(nr, 0, 1), ret(action))
  for (const nr of [t.nr.keyctl, t.nr.add_key, t.nr.request_key, t.nr.perf_event_open, t.nr.bpf, t.nr.userfaultfd]) deny(nr, retErrno(EPERM))
  for (const nr of [t.nr.io_uring_setup, t.nr.io_uring_enter, t.nr.io_uring_register]) deny(nr, retErrno(ENOSYS))
  // personality(persona): only the query and PER_LINUX (ADDR_NO_RANDOMIZE and friends are refused).
  insns.push(jeq(t.nr.personality, 0, 5), ld(ARG0_LO), jeq(0, 2, 0), jeq(0xffffffff, 1, 0), ret(retErrno(EPERM)), ret(RET_ALLOW))
  // socket(domain, ...): no netlink (the host kernel's routing, audit, uevents) and no vsock (the hypervisor).
  insns.push(jeq(t.nr.socket, 0, 5), ld(ARG0_LO), jeq(AF_NETLINK, 2, 0), jeq(AF_VSOCK, 1, 0), ret(RET_ALLOW), ret(retErrno(EAFNOSUPPORT)))
  insns.push(ret(RET_ALLOW))
  const out = Buffer.alloc(insns.length * 8)
  insns.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8)
    out.writeUInt8(jt, i * 8 + 2)
    out.writeUInt8(jf, i * 8 + 3)
    out.writeUInt32LE(k, i * 8 + 4)
  })
  return out
}
