//! Byte spans of the spec text turned into `file:line:col` errors and origins.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::spec::table::Origin;

/// Turns byte spans of the spec text into `file:line:col` errors.
pub(super) struct Positions<'a> {
    pub file: PathBuf,
    pub text: &'a str,
}

impl Positions<'_> {
    pub(super) fn line_col(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    pub(super) fn error(&self, span: Range<usize>, message: String, hint: Option<String>) -> Error {
        let (line, col) = self.line_col(span.start);
        Error::Spec {
            file: self.file.clone(),
            line,
            col,
            message,
            hint,
        }
    }

    /// The text parsed as TOML into `T`; a syntax or shape error at its `file:line:col`.
    pub(super) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        toml::from_str(self.text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            self.error(span, e.message().to_string(), None)
        })
    }

    pub(super) fn origin(&self, span: Range<usize>) -> Origin {
        Origin {
            file: self.file.clone(),
            line: self.line_col(span.start).0,
        }
    }
}

/// `path` relative to the project directory when it is inside it, for short messages.
pub fn display_path_in(project_dir: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(project_dir)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}
