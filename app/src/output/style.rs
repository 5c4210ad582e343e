//! Colour, used sparingly: `check`'s verdict, warnings and headings. On by default only on
//! a terminal, never when `NO_COLOR` is set to anything (<https://no-color.org>) or
//! `TERM=dumb`; `--color always|never` overrides.
//!
//! Everything on stdout passes [`ControlEscaper`], which shows escape bytes from input data
//! as text. Our own styles must still reach the terminal, so they never travel as bytes
//! through the escaper: a reporter asks its writer to [`Paint::paint`] a span in a
//! [`Tone`], and the escaper writes the style's escapes straight to the terminal around the
//! (escaped) text. Input data therefore cannot produce a style, and with colour off the
//! output is exactly the plain text.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use anstyle::{AnsiColor, Style};

use super::terminal::ControlEscaper;

/// What a coloured span says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Within limits (`ok`).
    Good,
    /// Over a limit.
    Bad,
    /// A warning.
    Warning,
    /// A heading: a device's block in `summary`.
    Heading,
}

impl Tone {
    fn style(self) -> Style {
        match self {
            Tone::Good => Style::new().fg_color(Some(AnsiColor::Green.into())).bold(),
            Tone::Bad => Style::new().fg_color(Some(AnsiColor::Red.into())).bold(),
            Tone::Warning => Style::new().fg_color(Some(AnsiColor::Yellow.into())),
            Tone::Heading => Style::new().bold(),
        }
    }
}

/// When to colour (`--color`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set or TERM is dumb.
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

/// Whether to colour a stream: `terminal` is whether it is one, `no_color` and `term` the
/// values of `NO_COLOR` and `TERM`.
pub fn colour_wanted(
    when: ColorWhen,
    terminal: bool,
    no_color: Option<&str>,
    term: Option<&str>,
) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => terminal && no_color.is_none_or(str::is_empty) && term != Some("dumb"),
    }
}

/// [`colour_wanted`] for a stream, from this process's environment.
pub fn colour_for(when: ColorWhen, stream: &impl std::io::IsTerminal) -> bool {
    let var = |name| std::env::var(name).ok();
    colour_wanted(
        when,
        stream.is_terminal(),
        var("NO_COLOR").as_deref(),
        var("TERM").as_deref(),
    )
}

/// Whether stderr's warnings are coloured; set once by `main`.
static STDERR_COLOUR: AtomicBool = AtomicBool::new(false);

/// Colour stderr's warning labels from now on (or not).
pub fn set_stderr_colour(on: bool) {
    STDERR_COLOUR.store(on, Ordering::Relaxed);
}

/// `warning:` for a line on stderr, coloured when stderr is.
pub fn stderr_warning() -> String {
    if STDERR_COLOUR.load(Ordering::Relaxed) {
        let style = Tone::Warning.style();
        format!("{}warning:{}", style.render(), style.render_reset())
    } else {
        "warning:".to_owned()
    }
}

/// A writer that can show a span in a [`Tone`].
pub trait Paint: Write {
    /// Write `text` in `tone` where colour is on, plain where it is off.
    fn paint(&mut self, tone: Tone, text: &str) -> io::Result<()>;
}

/// Plain text (tests, files).
impl Paint for Vec<u8> {
    fn paint(&mut self, _tone: Tone, text: &str) -> io::Result<()> {
        self.write_all(text.as_bytes())
    }
}

impl<W: Write> Paint for ControlEscaper<W> {
    fn paint(&mut self, tone: Tone, text: &str) -> io::Result<()> {
        if !self.colour() {
            return self.write_all(text.as_bytes());
        }
        let style = tone.style();
        self.write_raw(style.render().to_string().as_bytes())?;
        self.write_all(text.as_bytes())?;
        self.write_raw(style.render_reset().to_string().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_and_pipes_turn_colour_off() {
        use ColorWhen::*;
        assert!(colour_wanted(Auto, true, None, Some("xterm-256color")));
        assert!(colour_wanted(Auto, true, Some(""), None));
        assert!(!colour_wanted(Auto, true, Some("1"), None));
        assert!(!colour_wanted(Auto, false, None, None));
        assert!(!colour_wanted(Auto, true, None, Some("dumb")));
        assert!(colour_wanted(Always, false, Some("1"), None));
        assert!(!colour_wanted(Never, true, None, None));
    }

    #[test]
    fn our_styles_pass_the_escaper_and_input_escapes_do_not() {
        let mut out = ControlEscaper::new(Vec::new()).with_colour(true);
        out.paint(Tone::Good, "ok").expect("paint");
        out.write_all(b": \x1b[31mfake").expect("write");
        out.flush().expect("flush");
        let text = String::from_utf8(out.into_inner()).expect("UTF-8");
        assert_eq!(text, "\x1b[1m\x1b[32mok\x1b[0m: \\u001b[31mfake");
        let mut plain = ControlEscaper::new(Vec::new()).with_colour(false);
        plain.paint(Tone::Bad, "over\x1b").expect("paint");
        assert_eq!(plain.into_inner(), b"over\\u001b");
    }
}
