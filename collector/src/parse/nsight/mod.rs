//! Nsight Systems exports (`nsys export --type sqlite` and `--type json`).
//! Being written in this session; until then these files are refused with a clear error.

use std::path::Path;

use super::input::Input;
use super::{LoadErrorKind, LoadOptions, SourceError};
use crate::model::Recording;

/// Read an `nsys export --type sqlite` database.
pub fn read_sqlite(_path: &Path, _options: LoadOptions) -> Result<Recording, SourceError> {
    Err(SourceError {
        offset: None,
        kind: LoadErrorKind::Unrecognized(
            "Nsight Systems SQLite exports are not supported yet".into(),
        ),
    })
}

/// Read an `nsys export --type json` file.
pub fn read_json(_input: Input, _options: LoadOptions) -> Result<Recording, SourceError> {
    Err(SourceError {
        offset: None,
        kind: LoadErrorKind::Unrecognized(
            "Nsight Systems JSON exports are not supported yet".into(),
        ),
    })
}
