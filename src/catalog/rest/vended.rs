//! Credentials a REST catalog's server vends for a table's files (in the table's `config`, or
//! the `storage-credentials` entry with the longest prefix of its location), and where they
//! are used.
//!
//! - A table's files are read and written with them: vended keys replace the spec's and the
//!   environment's keys (all three, so an ambient session token never rides along with a
//!   vended key); the spec's other storage settings (endpoint, region, path style) still win
//!   over the server's `config`, and the server's `/v1/config` `overrides` over everything.
//! - The catalog-wide file access (the control table's and the publish journal's files,
//!   metadata read by location, deletions) uses them too: a path under a prefix credentials
//!   were vended for goes to the newest credentials vended for the longest such prefix; any
//!   other path is read with the catalog's own properties.
//!
//! Routes grow with the table locations a process loads (one per prefix, replaced when vended
//! again), so a scheduler running for a year holds one per table, not one per load.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use iceberg::io::{
    FileIO, FileMetadata, FileRead, FileWrite, InputFile, OutputFile, Storage, StorageConfig,
    StorageFactory, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN,
};
use iceberg::Result;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The FileIO properties that make up a credential: replaced as one.
const CREDENTIAL_KEYS: [&str; 3] = [S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN];

/// The layers of a loaded table's FileIO properties, lowest first but for the credentials.
pub(super) struct TableProps<'a> {
    /// The server's `/v1/config` `defaults`.
    pub defaults: &'a HashMap<String, String>,
    /// The table's `config`, then the credentials vended for its location (later wins).
    pub server: HashMap<String, String>,
    /// The spec's storage settings and the credentials named there or found in the
    /// environment.
    pub spec: &'a HashMap<String, String>,
    /// The server's `/v1/config` `overrides`.
    pub overrides: &'a HashMap<String, String>,
}

impl TableProps<'_> {
    /// The merged properties, and whether the server vended a credential (an access key).
    pub fn merge(self) -> (HashMap<String, String>, bool) {
        let mut server = self.server;
        let vended = server.contains_key(S3_ACCESS_KEY_ID);
        let credential: Vec<(String, String)> = match vended {
            true => CREDENTIAL_KEYS
                .iter()
                .filter_map(|key| server.remove_entry(*key))
                .collect(),
            false => Vec::new(),
        };
        let mut props = self.defaults.clone();
        props.extend(server);
        props.extend(self.spec.clone());
        if vended {
            for key in CREDENTIAL_KEYS {
                props.remove(key);
            }
            props.extend(credential);
        }
        props.extend(self.overrides.clone());
        (props, vended)
    }
}

/// Whether `path` lies under `prefix` (the prefix itself, or past a `/` after it).
fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || prefix.ends_with('/') || rest.starts_with('/'))
}

/// The prefixes credentials were vended for, each with a FileIO using them.
#[derive(Default)]
pub(super) struct VendedRoutes {
    routes: RwLock<Vec<(String, FileIO)>>,
}

impl VendedRoutes {
    /// Files under `prefix` are now reached through `file_io` (replacing an older route).
    pub fn add(&self, prefix: &str, file_io: FileIO) {
        let prefix = prefix.trim_end_matches('/').to_string();
        let mut routes = self.routes.write().unwrap_or_else(|e| e.into_inner());
        match routes.iter_mut().find(|(p, _)| *p == prefix) {
            Some(route) => route.1 = file_io,
            None => routes.push((prefix, file_io)),
        }
    }

    /// The route with the longest prefix `path` lies under.
    fn route(&self, path: &str) -> Option<(String, FileIO)> {
        let routes = self.routes.read().unwrap_or_else(|e| e.into_inner());
        routes
            .iter()
            .filter(|(prefix, _)| under(path, prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .cloned()
    }
}

// The FileIOs hold secrets: only the prefixes are shown.
impl fmt::Debug for VendedRoutes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let routes = self.routes.read().unwrap_or_else(|e| e.into_inner());
        let prefixes: Vec<&str> = routes.iter().map(|(p, _)| p.as_str()).collect();
        f.debug_struct("VendedRoutes")
            .field("prefixes", &prefixes)
            .finish()
    }
}

/// Builds the catalog-wide storage: `base` for paths without vended credentials, `routes`
/// for the others. Never serialized (it would carry secrets).
#[derive(Debug)]
pub(super) struct RoutingStorageFactory {
    pub base: Arc<dyn StorageFactory>,
    pub routes: Arc<VendedRoutes>,
}

#[typetag::serde]
impl StorageFactory for RoutingStorageFactory {
    fn build(&self, config: &StorageConfig) -> Result<Arc<dyn Storage>> {
        Ok(Arc::new(RoutingStorage {
            base: self.base.build(config)?,
            routes: self.routes.clone(),
        }))
    }
}

/// Storage sending each path to the FileIO of its vended credentials, else to `base`.
#[derive(Debug)]
pub(super) struct RoutingStorage {
    base: Arc<dyn Storage>,
    routes: Arc<VendedRoutes>,
}

fn never<E: serde::ser::Error>() -> E {
    E::custom("a catalog's storage with vended credentials is never serialized")
}

macro_rules! not_serialized {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, _: S) -> std::result::Result<S::Ok, S::Error> {
                Err(never())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(_: D) -> std::result::Result<Self, D::Error> {
                Err(serde::de::Error::custom(
                    "a catalog's storage with vended credentials is never deserialized",
                ))
            }
        }
    };
}
not_serialized!(RoutingStorageFactory);
not_serialized!(RoutingStorage);

#[async_trait]
#[typetag::serde]
impl Storage for RoutingStorage {
    async fn exists(&self, path: &str) -> Result<bool> {
        match self.routes.route(path) {
            Some((_, io)) => io.exists(path).await,
            None => self.base.exists(path).await,
        }
    }

    async fn metadata(&self, path: &str) -> Result<FileMetadata> {
        self.new_input(path)?.metadata().await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        self.new_input(path)?.read().await
    }

    async fn reader(&self, path: &str) -> Result<Box<dyn FileRead>> {
        self.new_input(path)?.reader().await
    }

    async fn write(&self, path: &str, bs: Bytes) -> Result<()> {
        self.new_output(path)?.write(bs).await
    }

    async fn writer(&self, path: &str) -> Result<Box<dyn FileWrite>> {
        self.new_output(path)?.writer().await
    }

    async fn delete(&self, path: &str) -> Result<()> {
        match self.routes.route(path) {
            Some((_, io)) => io.delete(path).await,
            None => self.base.delete(path).await,
        }
    }

    async fn delete_prefix(&self, path: &str) -> Result<()> {
        match self.routes.route(path) {
            Some((_, io)) => io.delete_prefix(path).await,
            None => self.base.delete_prefix(path).await,
        }
    }

    async fn delete_stream(&self, paths: BoxStream<'static, String>) -> Result<()> {
        let mut groups: HashMap<Option<String>, (Option<FileIO>, Vec<String>)> = HashMap::new();
        for path in paths.collect::<Vec<_>>().await {
            let route = self.routes.route(&path);
            let key = route.as_ref().map(|(p, _)| p.clone());
            let group = groups
                .entry(key)
                .or_insert((route.map(|(_, io)| io), vec![]));
            group.1.push(path);
        }
        for (io, paths) in groups.into_values() {
            match io {
                Some(io) => io.delete_stream(stream::iter(paths)).await?,
                None => self.base.delete_stream(stream::iter(paths).boxed()).await?,
            }
        }
        Ok(())
    }

    fn new_input(&self, path: &str) -> Result<InputFile> {
        match self.routes.route(path) {
            Some((_, io)) => io.new_input(path),
            None => self.base.new_input(path),
        }
    }

    fn new_output(&self, path: &str) -> Result<OutputFile> {
        match self.routes.route(path) {
            Some((_, io)) => io.new_output(path),
            None => self.base.new_output(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::io::FileIOBuilder;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Vended keys replace all three credential keys of the spec; other spec settings still
    /// win over the server's config, and overrides over everything.
    #[test]
    fn vended_keys_win_as_one_and_spec_settings_stay() {
        let spec = map(&[
            (S3_ACCESS_KEY_ID, "AMBIENT"),
            (S3_SECRET_ACCESS_KEY, "ambient-secret"),
            (S3_SESSION_TOKEN, "ambient-token"),
            ("s3.endpoint", "http://spec"),
        ]);
        let server = map(&[
            (S3_ACCESS_KEY_ID, "VENDED"),
            (S3_SECRET_ACCESS_KEY, "vended-secret"),
            ("s3.endpoint", "http://server"),
            ("s3.region", "eu-west-1"),
        ]);
        let overrides = map(&[("s3.region", "us-east-1")]);
        let none = HashMap::new();
        let (props, vended) = TableProps {
            defaults: &none,
            server,
            spec: &spec,
            overrides: &overrides,
        }
        .merge();
        assert!(vended);
        assert_eq!(props[S3_ACCESS_KEY_ID], "VENDED");
        assert_eq!(props[S3_SECRET_ACCESS_KEY], "vended-secret");
        assert!(!props.contains_key(S3_SESSION_TOKEN), "{:?}", props.keys());
        assert_eq!(props["s3.endpoint"], "http://spec");
        assert_eq!(props["s3.region"], "us-east-1");
        let (props, vended) = TableProps {
            defaults: &none,
            server: map(&[("s3.endpoint", "http://server")]),
            spec: &spec,
            overrides: &none,
        }
        .merge();
        assert!(!vended);
        assert_eq!(props[S3_ACCESS_KEY_ID], "AMBIENT");
        assert_eq!(props[S3_SESSION_TOKEN], "ambient-token");
    }

    /// Paths go to the longest vended prefix they lie under, on `/` boundaries; the newest
    /// route for a prefix replaces the older one; the rest go to the base storage.
    #[tokio::test]
    async fn paths_route_to_the_longest_vended_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let routes = Arc::new(VendedRoutes::default());
        let mem = || FileIO::new_with_memory();
        let (wide, narrow) = (mem(), mem());
        routes.add(&format!("{root}/wh"), mem());
        routes.add(&format!("{root}/wh/"), wide.clone());
        routes.add(&format!("{root}/wh/t"), narrow.clone());
        let factory = RoutingStorageFactory {
            base: Arc::new(crate::catalog::LocalStorageFactory),
            routes: routes.clone(),
        };
        let io = FileIOBuilder::new(Arc::new(factory)).build();
        let files = [
            format!("{root}/wh/t/a"),
            format!("{root}/wh/u/b"),
            format!("{root}/wh2/c"),
        ];
        for file in &files {
            io.new_output(file)
                .unwrap()
                .write("x".into())
                .await
                .unwrap();
        }
        assert!(narrow.exists(&files[0]).await.unwrap());
        assert!(!wide.exists(&files[0]).await.unwrap());
        assert!(wide.exists(&files[1]).await.unwrap());
        assert!(std::fs::metadata(&files[2]).is_ok(), "outside every prefix");
        io.delete_stream(stream::iter(files.to_vec()))
            .await
            .unwrap();
        assert!(!narrow.exists(&files[0]).await.unwrap());
        assert!(!wide.exists(&files[1]).await.unwrap());
        assert!(std::fs::metadata(&files[2]).is_err());
        let shown = format!("{routes:?}");
        assert_eq!(shown.matches("/wh").count(), 2, "{shown}");
    }
}
