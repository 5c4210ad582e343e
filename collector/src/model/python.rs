//! What a profiler trace's Python spans name. `with_stack=True` records each Python call
//! as a `python_function` span named `file(line): function`
//! (`torch/nn/modules/linear.py(125): forward`) and each `nn.Module` call as one named
//! `nn.Module: Class_N` (the N-th instance of the class called); built-in calls are named
//! `<built-in method …>` and say nothing of where the program was.

/// One Python call as its span names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PythonCall<'a> {
    /// The source file, as the profiler wrote it (often relative to a package root).
    pub file: &'a str,
    /// The line being run in that file.
    pub line: u32,
    /// The function.
    pub function: &'a str,
}

impl PythonCall<'_> {
    /// The label reports give a frame: `file:line function`, as for a snapshot's frames.
    pub fn label(&self) -> String {
        format!("{}:{} {}", self.file, self.line, self.function)
    }
}

/// The call a `python_function` span's name records, if it names one: `file(line):
/// function`; `None` for built-ins and module scopes.
pub fn python_call(name: &str) -> Option<PythonCall<'_>> {
    let (head, function) = name.rsplit_once("): ")?;
    let (file, line) = head.rsplit_once('(')?;
    let line = line.parse().ok()?;
    (!file.is_empty() && !file.starts_with('<')).then_some(PythonCall {
        file,
        line,
        function,
    })
}

/// The module a `python_function` span's name scopes (`nn.Module: Linear_3` →
/// `Linear_3`), if it is a module's scope.
pub fn module_scope(name: &str) -> Option<&str> {
    name.strip_prefix("nn.Module: ").filter(|m| !m.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_modules_read_from_span_names() {
        let call = python_call("torch/nn/modules/linear.py(125): forward").expect("a call");
        assert_eq!(
            (call.file, call.line, call.function),
            ("torch/nn/modules/linear.py", 125, "forward")
        );
        assert_eq!(call.label(), "torch/nn/modules/linear.py:125 forward");
        let module = python_call("gen_truth.py(336): <module>").expect("a call");
        assert_eq!((module.line, module.function), (336, "<module>"));
        // A path with parentheses keeps them: only the last "(line): " splits.
        let odd = python_call("/home/a (copy)/t.py(9): f(x)").expect("a call");
        assert_eq!(
            (odd.file, odd.line, odd.function),
            ("/home/a (copy)/t.py", 9, "f(x)")
        );
        for not_a_call in [
            "<built-in method items of dict object at 0x7f8a2c7b7640>",
            "<built-in function isinstance>",
            "nn.Module: Linear_3",
            "t.py(x): f",
            "(3): f",
        ] {
            assert_eq!(python_call(not_a_call), None, "{not_a_call}");
        }
        assert_eq!(module_scope("nn.Module: Linear_3"), Some("Linear_3"));
        assert_eq!(module_scope("nn.Module: "), None);
        assert_eq!(module_scope("t.py(1): f"), None);
    }
}
