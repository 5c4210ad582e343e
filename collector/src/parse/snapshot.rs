//! PyTorch CUDA caching-allocator snapshots (`torch.cuda.memory._dump_snapshot` pickles).
//! Being written in this session; until then these files are refused with a clear error.

use super::input::Input;
use super::{LoadErrorKind, LoadOptions, SourceError};
use crate::model::Recording;

/// Read an allocator snapshot pickle.
pub fn read(_input: Input, _options: LoadOptions) -> Result<Recording, SourceError> {
    Err(SourceError {
        offset: None,
        kind: LoadErrorKind::Unrecognized("allocator snapshots are not supported yet".into()),
    })
}
