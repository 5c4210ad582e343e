//! What the egui_kittest tests read of the viewer's state (test builds only).

use super::super::doc::Document;
use super::super::export::ExportWindow;
use super::super::files::FileBrowser;
use super::ViewerApp;

impl ViewerApp {
    /// The open documents.
    pub fn docs(&self) -> &[Document] {
        &self.docs
    }

    /// The open documents, to change their view state.
    pub fn docs_mut(&mut self) -> &mut [Document] {
        &mut self.docs
    }

    /// The built-in file browser.
    pub fn browser_mut(&mut self) -> &mut FileBrowser {
        &mut self.browser
    }

    /// The export window, when open.
    pub fn export_mut(&mut self) -> Option<&mut ExportWindow> {
        self.export.as_mut()
    }

    /// The built-in file browser.
    pub fn browser(&self) -> &FileBrowser {
        &self.browser
    }

    /// What each file being loaded has shown of its memory so far.
    pub fn loading_previews(&self) -> Vec<collector::parse::preview::PreviewState> {
        self.loads.iter().map(|l| l.preview()).collect()
    }

    /// The errors shown.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// Whether anything is loading or being computed.
    pub fn busy(&self) -> bool {
        !self.loads.is_empty()
            || self.docs.iter().any(Document::busy)
            || self.export.as_ref().is_some_and(ExportWindow::busy)
    }
}
