//! The recorded program: started as vramscope's child, its signals forwarded, waited for
//! without a race, and its outcome turned into vramscope's exit code.
//!
//! Signals. Ctrl-C in a terminal sends SIGINT to the whole foreground process group, so the
//! program already has it: vramscope must survive it, not send a second one, and wait for
//! the program to finish (a training script may checkpoint on KeyboardInterrupt). A signal
//! sent to vramscope alone (`kill`, a scheduler, `timeout`) must reach the program. The two
//! are told apart by the signal's origin: the terminal's line discipline sends with
//! `si_code == SI_KERNEL`, `kill(2)` with `SI_USER` and the sender's pid. So the signals are
//! blocked in every thread and read from a signalfd on a named thread, which forwards all
//! but the terminal's. (A user who signals the whole process group by hand, `kill -INT -PGID`,
//! reaches the program twice; nothing in the signal says it was sent to a group.)
//!
//! Waiting. The forwarding thread must never signal a pid the kernel may have reused, so the
//! program is waited for with `waitid(WNOWAIT)`, which leaves it a zombie; the thread is
//! stopped and joined, and only then is the program reaped.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::output::terminal::eprint_escaped;
use collector::parse::recording::Line;
use crossbeam_channel::Sender;
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;

/// The signals vramscope survives and forwards to the program (unless they came from the
/// terminal, which sent them to the program too).
const FORWARDED: [Signal; 6] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

/// How the program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
}

impl Outcome {
    /// From the status `wait` returned.
    pub fn from_status(status: ExitStatus) -> Outcome {
        Outcome {
            exit_code: status.code(),
            signal: status.signal(),
        }
    }

    /// vramscope's exit code: the program's, or 128 + N when signal N ended it (as shells
    /// report it).
    pub fn code(&self) -> u8 {
        match (self.exit_code, self.signal) {
            (Some(c), _) => (c & 0xff) as u8,
            (None, Some(s)) => (128 + s.clamp(0, 127)) as u8,
            (None, None) => 1,
        }
    }

    /// In words, for the summary.
    pub fn describe(&self) -> String {
        match (self.exit_code, self.signal) {
            (Some(c), _) => format!("exited with {c}"),
            (None, Some(s)) => {
                let name = Signal::try_from(s)
                    .map_or_else(|_| format!("signal {s}"), |sig| sig.as_str().to_owned());
                format!("was killed by {name} (exit code {})", self.code())
            }
            (None, None) => "ended in an unknown way".to_owned(),
        }
    }
}

/// Block the forwarded signals and SIGCHLD in this thread, before any other thread exists,
/// so every thread vramscope starts inherits the mask and the signalfd sees them all. (The
/// program gets a clean mask: Rust's `Command` resets it in the child before `exec`.)
pub fn block_signals() -> nix::Result<SigSet> {
    let mut set = SigSet::empty();
    for s in FORWARDED {
        set.add(s);
    }
    set.add(Signal::SIGCHLD);
    set.thread_block()?;
    Ok(set)
}

/// Start the program: same stdin, stdout, stderr and environment, plus `env`. It is
/// started through vramscope's own exec step ([`exec_step`]), which clears the signal mask
/// and becomes the program with the same pid: the safe way to give the program a clean mask
/// (the alternative, `pre_exec`, is unsafe code).
pub fn spawn(command: &[OsString], env: &[(OsString, OsString)]) -> io::Result<Child> {
    let (program, _) = command
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no command"))?;
    // A missing program is reported here, as a failed start, rather than as the exit code
    // of the exec step.
    let missing = if program.as_encoded_bytes().contains(&b'/') {
        !Path::new(program).exists()
    } else {
        which(program).is_none()
    };
    if missing {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "no such program (looked up in PATH as the shell would)",
        ));
    }
    // One that is there but cannot be run is a failed start too (126), not a run of the
    // exec step that ends with 126 and leaves a recording of nothing.
    if program.as_encoded_bytes().contains(&b'/') && !executable(Path::new(program)) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not an executable file (chmod +x it, or run it through its interpreter)",
        ));
    }
    Command::new(std::env::current_exe()?)
        .arg(super::EXEC_STEP)
        .arg("--")
        .args(command)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .spawn()
}

/// Whether `path` is a file with an execute bit (as `execvp` would need).
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `program` looked up in PATH as `execvp` would.
fn which(program: &OsString) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

/// The exec step, in the child: clear the mask, exec the program; on failure say why and
/// return the shell's code for it.
pub fn exec_step(command: &[OsString]) -> u8 {
    use std::os::unix::process::CommandExt;
    if let Err(e) = SigSet::empty().thread_set_mask() {
        eprint_escaped!("vramscope: cannot clear the signal mask: {e}");
    }
    let Some((program, args)) = command.split_first() else {
        eprint_escaped!("vramscope: no command to run");
        return 127;
    };
    let err = Command::new(program).args(args).exec();
    eprint_escaped!("vramscope: cannot run {}: {err}", program.to_string_lossy());
    spawn_failure_code(&err)
}

/// The exit code for a program that could not be started, as shells use them: 127 not
/// found, 126 found but not executable.
pub fn spawn_failure_code(e: &io::Error) -> u8 {
    match e.kind() {
        io::ErrorKind::NotFound => 127,
        _ => 126,
    }
}

/// The forwarding thread.
pub struct Forwarder {
    handle: Option<JoinHandle<()>>,
}

/// Start forwarding `set`'s signals to `child`, noting each in the recording.
pub fn forward(
    child: u32,
    set: &SigSet,
    notes: Sender<Line>,
    start: Instant,
) -> io::Result<Forwarder> {
    let fd = SignalFd::new(set).map_err(io::Error::from)?;
    let pid = Pid::from_raw(child as i32);
    let handle = std::thread::Builder::new()
        .name("vramscope-signals".into())
        .spawn(move || {
            let t_ns = || i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX);
            loop {
                let info = match fd.read_signal() {
                    Ok(Some(info)) => info,
                    Ok(None) => continue,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => return,
                };
                let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else {
                    continue;
                };
                if sig == Signal::SIGCHLD {
                    if has_exited(pid) {
                        return;
                    }
                    continue;
                }
                let note = if info.ssi_code == nix::libc::SI_KERNEL {
                    format!("{} from the terminal reached the program directly; recording until it exits", sig.as_str())
                } else {
                    let sent = kill(pid, sig);
                    let from = match info.ssi_pid {
                        0 => String::new(),
                        p => format!(" from pid {p}"),
                    };
                    match sent {
                        Ok(()) => format!("{}{from} forwarded to the program", sig.as_str()),
                        Err(e) => format!("{}{from} could not be forwarded: {e}", sig.as_str()),
                    }
                };
                // Never block on a stalled writer while signals wait.
                let _ = notes.try_send(Line::Note { t_ns: t_ns(), note });
            }
        })?;
    Ok(Forwarder {
        handle: Some(handle),
    })
}

/// Whether `pid` has exited (a zombie not yet reaped, or gone), without reaping it.
fn has_exited(pid: Pid) -> bool {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    !matches!(waitid(Id::Pid(pid), flags), Ok(WaitStatus::StillAlive))
}

/// Wait for the program to end, stop the forwarder, then reap the program.
pub fn wait(mut child: Child, mut forwarder: Option<Forwarder>) -> io::Result<Outcome> {
    let pid = Pid::from_raw(child.id() as i32);
    loop {
        match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Ok(_) | Err(nix::errno::Errno::ECHILD) => break,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(io::Error::from(e)),
        }
    }
    if let Some(mut f) = forwarder.take()
        && let Some(h) = f.handle.take()
    {
        // The program's SIGCHLD wakes the thread; one more makes sure it sees the exit even
        // if an earlier SIGCHLD (a stop, a continue) was read first.
        let _ = kill(nix::unistd::getpid(), Signal::SIGCHLD);
        let _ = h.join();
    }
    child.wait().map(Outcome::from_status)
}

/// CPU time vramscope itself used so far (user + system, every thread; not the program's).
pub fn own_cpu_ns() -> Option<u64> {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let ns = |t: nix::sys::time::TimeVal| {
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_usec()).unwrap_or(0) * 1_000
    };
    Some(ns(u.user_time()) + ns(u.system_time()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        let exited = |c| Outcome {
            exit_code: Some(c),
            signal: None,
        };
        let killed = |s| Outcome {
            exit_code: None,
            signal: Some(s),
        };
        assert_eq!(exited(0).code(), 0);
        assert_eq!(exited(3).code(), 3);
        assert_eq!(exited(256 + 7).code(), 7);
        assert_eq!(killed(9).code(), 137);
        assert_eq!(killed(15).code(), 143);
        assert!(
            killed(9).describe().contains("SIGKILL"),
            "{}",
            killed(9).describe()
        );
        let e = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(spawn_failure_code(&e), 127);
        let e = io::Error::from(io::ErrorKind::PermissionDenied);
        assert_eq!(spawn_failure_code(&e), 126);
    }
}
