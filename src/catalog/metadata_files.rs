//! Metadata files a command has read, kept by location. An Iceberg metadata file never
//! changes once written (each version gets a file of its own name), so a table loaded again at
//! the same version needs only its pointer from the catalog, not the file: on object storage
//! that is one request and one JSON parse less per load.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use iceberg::io::FileIO;
use iceberg::spec::TableMetadata;

/// How many metadata files are kept at most; past it the set starts over (a command reads a
/// few versions of each of its tables).
const KEPT: usize = 64;

/// The metadata files read so far, by location.
#[derive(Default)]
pub struct MetadataFiles {
    kept: Mutex<HashMap<String, Arc<TableMetadata>>>,
}

impl MetadataFiles {
    /// The metadata file at `location`, read through `file_io` the first time only.
    pub async fn read(
        &self,
        file_io: &FileIO,
        location: &str,
    ) -> iceberg::Result<Arc<TableMetadata>> {
        if let Some(kept) = self.lock().get(location) {
            return Ok(kept.clone());
        }
        let read = Arc::new(TableMetadata::read_from(file_io, location).await?);
        let mut kept = self.lock();
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert(location.to_string(), read.clone());
        Ok(read)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<TableMetadata>>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}
