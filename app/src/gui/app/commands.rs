//! Applying the commands panels push: opening and closing files, selecting ranges,
//! inspecting instants, highlighting ops — and sending the analyses they need to the
//! worker.

use std::sync::Arc;

use super::super::Command;
use super::super::doc::{Document, TimeView};
use super::super::export::ExportWindow;
use super::super::jobs::{self, Job, Request};
use super::super::panels;
use super::super::panels::InspectTarget;
use super::super::theme;
use super::ViewerApp;

impl ViewerApp {
    /// Apply a command now (what panels do through the frame; tests call it directly).
    pub fn apply(&mut self, ctx: &egui::Context, cmd: Command) {
        if let Command::Inspect(at_ns) = cmd {
            self.follow_inspect(at_ns);
        }
        match cmd {
            Command::Open(paths) => self.open(ctx, paths),
            Command::OpenDialog => self.open_dialog(ctx),
            Command::OpenBrowser => self.browser.open = true,
            Command::CancelLoad(i) => {
                if let Some(l) = self.loads.get(i) {
                    l.cancel();
                }
            }
            Command::Close(id) => {
                self.docs.retain(|d| d.id != id);
                self.diffs.retain(|k, _| k.0 != id && k.1 != id);
                for d in &mut self.docs {
                    if d.panels.compare.other == Some(id) {
                        d.panels.compare.other = None;
                    }
                }
                if self.active == Some(id) {
                    self.active = self.docs.last().map(|d| d.id);
                }
            }
            Command::Activate(id) => {
                self.active = Some(id);
                self.apply_grid(ctx, Command::ShowGrid(false));
            }
            Command::OpenGrid(_)
            | Command::GridOfTabs
            | Command::OpenFolderDialog
            | Command::ShowGrid(_)
            | Command::OpenRank(..)
            | Command::GridCursor(_)
            | Command::CancelGrid => self.apply_grid(ctx, cmd),
            Command::ClearRecent => self.recent.paths.clear(),
            Command::DismissError(i) => {
                if i < self.errors.len() {
                    self.errors.remove(i);
                }
            }
            Command::Export(kind) => {
                // A running export keeps its window; a new one replaces a finished one.
                if !self.export.as_ref().is_some_and(ExportWindow::busy)
                    && let Some(doc) = self.active_doc()
                {
                    self.export = Some(ExportWindow::new(kind, doc.data.clone()));
                }
            }
            Command::SetTheme(t) => {
                self.theme = t;
                theme::apply(ctx, t);
            }
            other => self.apply_to_active(other),
        }
    }

    fn apply_to_active(&mut self, cmd: Command) {
        let Some(i) = self.docs.iter().position(|d| Some(d.id) == self.active) else {
            return;
        };
        let mut requests = Vec::new();
        let doc = &mut self.docs[i];
        // The panel that shows the answer comes forward (SetTab names it outright).
        doc.tab = panels::shown_after(doc.tab, &cmd, &doc.data);
        match cmd {
            Command::SetDevice(d) => {
                doc.device = d;
                doc.timeline.y_range = None;
                let at = doc
                    .panels
                    .inspect
                    .target
                    .map(|t| t.at_ns)
                    .or(doc.peak().map(|p| p.0));
                if let Some(at_ns) = at {
                    requests.push(inspect_request(doc, at_ns, false));
                }
            }
            Command::FocusSearch => doc.panels.focus_search = true,
            Command::ShowOpLanes(on) => doc.timeline.show_op_lanes = on,
            Command::ResetView => {
                doc.view = TimeView::full(doc.data.duration_ns());
                doc.timeline.y_range = None;
            }
            Command::Select(window) => {
                doc.selection = window;
                doc.panels.table.window = window;
                match window {
                    None => {
                        doc.panels.table.rows = Arc::new(doc.data.rows.clone());
                        doc.panels.table.pending = None;
                        doc.panels.table.dirty = true;
                    }
                    Some(window) => {
                        let request = doc.request(Job::Table { window });
                        doc.panels.table.pending = Some(request.generation);
                        requests.push(request);
                    }
                }
            }
            Command::Inspect(at_ns) => {
                requests.push(inspect_request(doc, at_ns, false));
            }
            Command::InspectSnapshot => {
                let rec = &doc.data.rec;
                let at_ns = rec
                    .allocator
                    .as_ref()
                    .and_then(|a| a.time_ns)
                    .unwrap_or(rec.meta.end_ns);
                requests.push(inspect_request(doc, at_ns, true));
            }
            Command::HighlightOp(name) => {
                doc.panels.table.highlighted = name.clone();
                doc.panels.table.spans = None;
                if let Some(name) = name {
                    requests.push(doc.request(Job::OpSpans { name }));
                }
            }
            Command::CompareWith(other) => doc.panels.compare.other = other,
            Command::Advise(options) => {
                let request = doc.request(Job::Advise { options });
                doc.panels.advice.asked = Some(options);
                doc.panels.advice.pending = Some(request.generation);
                requests.push(request);
            }
            _ => {}
        }
        for r in requests {
            self.submit(r);
        }
    }

    pub(super) fn submit(&mut self, request: Request) {
        let request = match &self.worker {
            Some(w) => match w.try_submit(request) {
                Ok(()) => return,
                Err(r) => r,
            },
            None => request,
        };
        // No worker thread (or its queue is full): compute here rather than drop the request.
        let reply = jobs::run_now(request);
        self.accept(reply);
    }
}

pub(super) fn inspect_request(doc: &mut Document, at_ns: i64, at_snapshot: bool) -> Request {
    let device = doc.device;
    let simulate = doc.panels.segments.simulate;
    let request = doc.request(Job::Inspect {
        device,
        at_ns,
        at_snapshot,
        simulate,
    });
    doc.panels.inspect.target = Some(InspectTarget {
        device,
        at_ns,
        at_snapshot,
    });
    doc.panels.inspect.pending = Some(request.generation);
    request
}
