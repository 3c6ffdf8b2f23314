/**
 * The few steps between the host and bwrap that need a process of their own, done by a short perl
 * program (perl-base is Essential on Debian; it starts about as fast as sh) that then execs bwrap,
 * so the sandbox keeps the launcher's pid:
 *   1. join the turn's cgroups (while still root, which cgroup v2 needs to move a process);
 *   2. host is root: in a private mount namespace, bind every host source the sandbox mounts under
 *      a fresh tmpfs on /run, because the unprivileged bwrap cannot traverse the 0700 data dir
 *      (bwrap's --bind-fd resolves the fd back to its path, so it does not help); each source is
 *      opened O_PATH|O_NOFOLLOW and bound through its descriptor;
 *   3. host is root: drop to the sandbox user (groups, gid, uid, all three ids);
 *   4. join a fresh anonymous session keyring, so the host's keys are not even possessed.
 */

/** Syscall numbers the launcher uses, by node's `process.arch`. */
const NR: Readonly<Record<string, { readonly unshare: number; readonly mount: number; readonly setgroups: number; readonly setresgid: number; readonly setresuid: number; readonly keyctl: number }>> = {
  x64: { unshare: 272, mount: 165, setgroups: 116, setresgid: 119, setresuid: 117, keyctl: 250 },
  arm64: { unshare: 97, mount: 40, setgroups: 159, setresgid: 149, setresuid: 147, keyctl: 219 }
}

export const PERL = "/usr/bin/perl"
/** Where staged sources appear to bwrap (a tmpfs in the launcher's private mount namespace). */
export const STAGE_DIR = "/run"

export interface Staged {
  readonly source: string
  /** A plain name under STAGE_DIR. */
  readonly name: string
  readonly dir: boolean
}

export interface LaunchPlan {
  readonly procsFiles: ReadonlyArray<string>
  readonly user: { readonly uid: number; readonly gid: number } | undefined
  readonly stage: ReadonlyArray<Staged>
}

// Exit codes 90-99 name the step that failed (runner.log shows the errno).
const script = (nr: (typeof NR)[string]) => `
use strict; use Fcntl;
sub sc { my ($n, @a) = @_; my $r = syscall($n, @a); return $r }
sub fail { my ($code, $what) = @_; print STDERR "pynchy launcher: $what: $!\\n"; exit $code }
my ($uid, $gid) = (shift(@ARGV) + 0, shift(@ARGV) + 0);
my $n = shift @ARGV; my @procs = splice(@ARGV, 0, $n);
$n = shift @ARGV; my @stage = splice(@ARGV, 0, 3 * $n);
shift(@ARGV) eq "--" or fail(90, "arguments");
for my $f (@procs) { open(my $h, ">", $f) or fail(91, "cgroup"); print $h "$$\\n"; close($h) or fail(91, "cgroup") }
if (@stage) {
  sc(${nr.unshare}, 0x20000) == 0 or fail(92, "unshare");
  sc(${nr.mount}, 0, "/", 0, 0x40000 | 0x4000, 0) == 0 or fail(92, "private");
  my @open;
  for (my $i = 0; $i < @stage; $i += 3) { sysopen(my $h, $stage[$i], 010000000 | O_NOFOLLOW) or fail(93, "open source"); push @open, $h }
  sc(${nr.mount}, "tmpfs", "${STAGE_DIR}", "tmpfs", 2 | 4 | 8, "mode=0755") == 0 or fail(94, "tmpfs");
  for (my $i = 0; $i < @stage; $i += 3) {
    my $t = "${STAGE_DIR}/" . $stage[$i + 1];
    if ($stage[$i + 2] eq "d") { mkdir($t) or fail(95, "stage") } else { open(my $h, ">", $t) or fail(95, "stage"); close $h }
    sc(${nr.mount}, "/proc/self/fd/" . fileno($open[$i / 3]), $t, 0, 4096 | 0x4000, 0) == 0 or fail(95, "bind");
  }
  close $_ for @open;
}
if ($uid > 0) {
  sc(${nr.setgroups}, 1, pack("L", $gid)) == 0 or fail(96, "setgroups");
  sc(${nr.setresgid}, $gid, $gid, $gid) == 0 or fail(96, "setresgid");
  sc(${nr.setresuid}, $uid, $uid, $uid) == 0 or fail(96, "setresuid");
  ($< == $uid && $> == $uid && sc(${nr.setresuid}, 0, 0, 0) == -1) or fail(96, "uid drop");
}
# ENOSYS: a kernel without keyrings has none to leak.
sc(${nr.keyctl}, 1, 0) >= 0 or $! == 38 or fail(97, "session keyring");
exec { $ARGV[0] } @ARGV or fail(98, "exec");
`

export const launcherSupported = (arch: string = process.arch): boolean => NR[arch] !== undefined

/** `perl -e <launcher> ... -- command args`. */
export const launch = (plan: LaunchPlan, command: string, args: ReadonlyArray<string>): { command: string; args: Array<string> } => {
  const nr = NR[process.arch]
  if (nr === undefined) throw new Error(`the bwrap launcher has no syscall table for ${process.arch}`)
  return {
    command: PERL,
    args: [
      "-e", script(nr),
      String(plan.user?.uid ?? 0), String(plan.user?.gid ?? 0),
      String(plan.procsFiles.length), ...plan.procsFiles,
      String(plan.stage.length), ...plan.stage.flatMap((s) => [s.source, s.name, s.dir ? "d" : "f"]),
      "--", command, ...args
    ]
  }
}
