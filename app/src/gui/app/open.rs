//! Opening files: loads started in the order the files were named, their tabs added in
//! that order as they finish, the file dialog's choice.

use std::path::PathBuf;
use std::sync::Arc;

use super::super::doc::Document;
use super::super::files::{NativeDialog, portal_available};
use super::super::loaded::Loaded;
use super::super::loader::{LoadOutcome, Order, PendingLoad};
use super::ViewerApp;
use super::commands::inspect_request;

impl ViewerApp {
    /// Start loading `paths` (a file already open or loading is shown, not loaded again);
    /// ids are handed out in the order named, so tabs keep that order.
    pub(super) fn open(&mut self, ctx: &egui::Context, paths: Vec<PathBuf>) {
        let batch_first_id = self.next_id;
        for path in paths {
            let same =
                |p: &PathBuf| std::fs::canonicalize(p).ok() == std::fs::canonicalize(&path).ok();
            if let Some(d) = self.docs.iter().find(|d| same(&d.data.path)) {
                self.active = Some(d.id);
                continue;
            }
            if self.loads.iter().any(|l| same(&l.path)) {
                continue;
            }
            let mut load = PendingLoad::start(&path, self.options, ctx);
            load.order = Order {
                id: self.next_id,
                batch_first_id,
            };
            self.next_id += 1;
            self.loads.push(load);
        }
    }

    /// The system's file dialog, or the built-in browser where there is none.
    pub(super) fn open_dialog(&mut self, ctx: &egui::Context) {
        if self.dialog.is_some() {
            return;
        }
        if !portal_available() {
            self.browser.open = true;
            return;
        }
        match NativeDialog::start(&self.browser.dir, ctx) {
            Ok(d) => self.dialog = Some(d),
            Err(_) => self.browser.open = true,
        }
    }

    /// Take in finished loads (each its tab, or its error) and the open dialog's choice.
    pub(super) fn poll_loads(&mut self, ctx: &egui::Context) {
        let mut i = 0;
        while i < self.loads.len() {
            match self.loads[i].poll() {
                None => i += 1,
                Some(outcome) => {
                    let load = self.loads.remove(i);
                    match outcome {
                        LoadOutcome::Loaded(data) => self.add_document(*data, load.order),
                        LoadOutcome::Failed(message) => self.errors.push(message),
                    }
                    drop(load);
                }
            }
        }
        if let Some(files) = self.dialog.as_ref().and_then(NativeDialog::poll) {
            self.dialog = None;
            if let Some(dir) = files.first().and_then(|f| f.parent()) {
                self.browser.dir = dir.to_path_buf();
            }
            self.open(ctx, files);
        }
    }

    /// Add a loaded file's tab where its `order` puts it (tabs follow the order the files
    /// were named in, not the order their loads ended), and show it unless an earlier file
    /// of the same open is shown: opening A B shows A, with B beside it, every time.
    fn add_document(&mut self, data: Loaded, order: Order) {
        self.recent.push(&data.path);
        let id = order.id;
        let mut doc = Document::new(id, Arc::new(data));
        // A rank of the grid opens at the linked cursor, anything else at its peak.
        let at = self.link_document(id, &doc.data.path);
        let peak = at.or(doc.peak().map(|p| p.0));
        let earlier_shown = self
            .active
            .is_some_and(|a| (order.batch_first_id..id).contains(&a));
        if !earlier_shown {
            self.active = Some(id);
        }
        let request = peak.map(|at| inspect_request(&mut doc, at, false));
        let at_index = self.docs.partition_point(|d| d.id < id);
        self.docs.insert(at_index, doc);
        self.after_frame.extend(request);
    }
}
