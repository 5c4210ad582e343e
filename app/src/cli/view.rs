//! `vramscope view` (and `vramscope FILE…`): open the viewer on the files. Without a
//! display it says so, and what to run instead, rather than passing on the window
//! library's error.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::LoadArgs;

/// Run the viewer until its window closes.
pub fn run(paths: Vec<PathBuf>, load: LoadArgs) -> Result<ExitCode> {
    let file = paths
        .first()
        .map_or("FILE".to_owned(), |p| p.display().to_string());
    let instead = format!(
        "the viewer needs a desktop session. Use the CLI instead: vramscope summary {file}, vramscope report {file} -o DIR"
    );
    if cfg!(target_os = "linux") && !has_display(|name| std::env::var_os(name)) {
        anyhow::bail!("no display found (DISPLAY and WAYLAND_DISPLAY are unset); {instead}");
    }
    open_window(paths, load, &instead)?;
    Ok(ExitCode::SUCCESS)
}

/// The viewer's window, until it closes.
#[cfg(feature = "gui")]
fn open_window(paths: Vec<PathBuf>, load: LoadArgs, instead: &str) -> Result<()> {
    // Before the window's threads start: a signal removes an export's temporary.
    crate::output::file::guard_signals();
    crate::gui::run(paths, super::input::load_options(load))
        .map_err(|e| anyhow::anyhow!("cannot open the viewer window ({e:#}); {instead}"))
}

/// A build without the `gui` feature has no viewer: say how to get one.
#[cfg(not(feature = "gui"))]
fn open_window(_paths: Vec<PathBuf>, _load: LoadArgs, instead: &str) -> Result<()> {
    anyhow::bail!(
        "this vramscope was built without the viewer (cargo's --no-default-features); \
         build it with the default features (the `gui` feature) to open windows; {instead}"
    )
}

/// Whether a desktop session is there to open a window in (X11, or Wayland with XWayland):
/// `DISPLAY` or `WAYLAND_DISPLAY` set to something, as `var` reads them.
fn has_display(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| var(name).is_some_and(|v| !v.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::has_display;

    #[test]
    fn a_display_is_either_variable_set_to_something() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.into())
            }
        };
        assert!(has_display(env(&[("DISPLAY", ":0")])));
        assert!(has_display(env(&[("WAYLAND_DISPLAY", "wayland-0")])));
        assert!(!has_display(env(&[])));
        assert!(!has_display(env(&[
            ("DISPLAY", ""),
            ("WAYLAND_DISPLAY", "")
        ])));
    }
}
