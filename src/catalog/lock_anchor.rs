//! Where a catalog's run locks live, and the name messages give that catalog.
//!
//! Two catalogs never share a lock: the embedded catalog's locks sit next to its SQLite file;
//! a remote catalog's sit in the system temp folder under a name made from its kind and its
//! identity (an S3 Tables bucket ARN; a REST catalog's URI with its warehouse, so two buckets
//! behind one regional endpoint, or two Glue warehouses, lock apart).

use std::path::PathBuf;

use sha2::{Digest, Sha256};

/// The file run locks are kept next to, and the catalog they serialize runs on.
#[derive(Debug, Clone)]
pub struct LockAnchor {
    /// Lock files are named after this path (`<path>.<pipeline>.lock`).
    pub path: PathBuf,
    /// The catalog, as messages name it (`rest catalog https://… (warehouse …)`).
    pub catalog: String,
}

/// The file name, under the locks folder, of a remote catalog's locks: readable (kind and
/// identity with everything but ASCII letters and digits made `_`, at most 96 characters of it)
/// and unique (a hash of the whole identity), so identities that differ only in characters
/// made `_`, or past the cut, never share a lock.
pub(crate) fn remote_lock_name(kind: &str, identity: &str) -> String {
    let safe: String = identity
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(96)
        .collect();
    let hash = Sha256::digest(identity.as_bytes());
    let short: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{kind}-{safe}-{short}")
}

#[cfg(test)]
mod tests {
    use super::remote_lock_name;

    #[test]
    fn two_warehouses_behind_one_uri_lock_apart() {
        let uri = "https://s3tables.us-east-1.amazonaws.com/iceberg";
        let dev = remote_lock_name(
            "rest",
            &format!("{uri} (warehouse arn:aws:s3tables:us-east-1:1:bucket/dev)"),
        );
        let prod = remote_lock_name(
            "rest",
            &format!("{uri} (warehouse arn:aws:s3tables:us-east-1:1:bucket/prod)"),
        );
        assert_ne!(dev, prod);
        assert!(dev.starts_with("rest-https___s3tables_us_east_1"), "{dev}");
    }

    #[test]
    fn identities_that_differ_only_in_punctuation_or_past_the_cut_lock_apart() {
        assert_ne!(
            remote_lock_name("rest", "a/b"),
            remote_lock_name("rest", "a:b")
        );
        let long = "x".repeat(200);
        assert_ne!(
            remote_lock_name("rest", &format!("{long}1")),
            remote_lock_name("rest", &format!("{long}2"))
        );
        assert!(remote_lock_name("rest", &long).len() < 120);
    }
}
