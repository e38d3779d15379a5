//! A scheduler's claim on a tick of a pipeline on a remote catalog, so that schedulers on
//! several hosts (whose run locks, per machine, do not see each other) do not all do the
//! tick's work: a property of the control table, `pipeline.lease.<pipeline>`, set and renewed
//! by compare-and-set, holding the tick, who holds it and until when.
//!
//! - A scheduler takes the lease before it runs a due tick; one held by another scheduler,
//!   unexpired, leaves the tick to it ([`Leased::HeldBy`]).
//! - The holder renews it every third of `[schedule] lease` while the tick runs and removes it
//!   when done. A holder that crashed stops renewing: once the lease lapses, another host
//!   takes it over.
//! - The lease saves work; it is not what makes a tick run once. A holder paused past its
//!   lease could still publish after a takeover, and the publish's own check of the tick in
//!   the control table (`commit::publish`) refuses the second run of a tick.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::catalog::{RemoteCatalog, Swap};
use crate::commit::publish::set_control_property;
use crate::error::{Error, Result};
use crate::records::control_table;

/// How often a compare-and-set of the lease is tried before giving up.
const ATTEMPTS: usize = 20;

/// The lease as the control table holds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Claim {
    tick: String,
    /// Host and process, for messages.
    holder: String,
    /// Unique per claim: a holder renews or removes only its own.
    id: String,
    expires_at: DateTime<Utc>,
}

/// What taking the lease found.
pub enum Leased {
    /// This scheduler holds it (renewed in the background until [`Lease::release`]).
    Taken(Lease),
    /// Another scheduler holds it, unexpired: who, and until when.
    HeldBy(String),
}

/// A held lease. It ends with its holder's work on every path: [`Lease::release`] removes it;
/// dropped unreleased (the work panicked, was cancelled or timed out), its renewal stops at
/// once and its removal is started on the runtime (failing that, it lapses by itself).
pub struct Lease {
    remote: Arc<RemoteCatalog>,
    key: String,
    id: String,
    renewer: tokio::task::JoinHandle<()>,
    released: bool,
}

fn key_of(pipeline: &str) -> String {
    format!("pipeline.lease.{pipeline}")
}

fn holder() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown host".into());
    format!("{host} pid {}", std::process::id())
}

/// The claim in the control table's current version, and that version.
async fn current_claim(
    remote: &RemoteCatalog,
    key: &str,
) -> Result<(crate::catalog::Current, Option<Claim>)> {
    let control = control_table(remote).await?;
    let claim = control
        .metadata
        .properties()
        .get(key)
        .and_then(|text| serde_json::from_str(text).ok());
    Ok((control, claim))
}

/// The tick named by `pipeline`'s lease, expired or not: a tick some scheduler started to
/// serve (a holder that crashed leaves its claim to lapse).
pub async fn claimed_tick(remote: &RemoteCatalog, pipeline: &str) -> Result<Option<DateTime<Utc>>> {
    let (_, claim) = current_claim(remote, &key_of(pipeline)).await?;
    Ok(claim
        .and_then(|c| DateTime::parse_from_rfc3339(&c.tick).ok())
        .map(|t| t.with_timezone(&Utc)))
}

/// Who holds `pipeline`'s lease now (unexpired), as `take` would report it; `None` when the
/// tick is nobody's.
pub async fn holder_of(remote: &RemoteCatalog, pipeline: &str) -> Result<Option<String>> {
    let (_, claim) = current_claim(remote, &key_of(pipeline)).await?;
    Ok(claim.filter(|c| c.expires_at > Utc::now()).map(describe))
}

fn describe(claim: Claim) -> String {
    format!(
        "{} (serving tick {}, claim valid until {})",
        claim.holder,
        claim.tick,
        claim.expires_at.to_rfc3339()
    )
}

/// Takes the lease of `pipeline`'s tick `tick` for `ttl`, unless another scheduler holds it.
pub async fn take(
    remote: Arc<RemoteCatalog>,
    pipeline: &str,
    tick: &str,
    ttl: Duration,
) -> Result<Leased> {
    let key = key_of(pipeline);
    let id = uuid::Uuid::new_v4().to_string();
    for _ in 0..ATTEMPTS {
        let (control, claim) = current_claim(&remote, &key).await?;
        if let Some(other) = claim.filter(|c| c.expires_at > Utc::now()) {
            return Ok(Leased::HeldBy(describe(other)));
        }
        let mine = Claim {
            tick: tick.to_string(),
            holder: holder(),
            id: id.clone(),
            expires_at: Utc::now() + ttl,
        };
        let text = serde_json::to_string(&mine)
            .map_err(|e| Error::Internal(format!("cannot encode the lease: {e}")))?;
        if let Swap::Moved(_) = set_control_property(&remote, &control, &key, Some(&text)).await? {
            tracing::debug!(pipeline, tick, "lease taken");
            let renewer = tokio::spawn(renew(remote.clone(), key.clone(), mine, ttl));
            return Ok(Leased::Taken(Lease {
                remote,
                key,
                id,
                renewer,
                released: false,
            }));
        }
    }
    Err(Error::Conflict {
        table: crate::records::control_name().to_string(),
        message: "the control table kept changing while this scheduler tried to claim the tick"
            .into(),
    })
}

/// Extends `claim` every third of `ttl` until aborted, or until it is no longer this
/// scheduler's (taken over after it lapsed).
async fn renew(remote: Arc<RemoteCatalog>, key: String, mut claim: Claim, ttl: Duration) {
    loop {
        tokio::time::sleep(ttl / 3).await;
        claim.expires_at = Utc::now() + ttl;
        let Ok(text) = serde_json::to_string(&claim) else {
            return;
        };
        for _ in 0..ATTEMPTS {
            match current_claim(&remote, &key).await {
                Ok((control, Some(now))) if now.id == claim.id => {
                    match set_control_property(&remote, &control, &key, Some(&text)).await {
                        Ok(Swap::Moved(_)) => break,
                        Ok(_) => continue,
                        Err(e) => tracing::warn!("cannot renew the tick's lease: {e}"),
                    }
                }
                Ok(_) => {
                    tracing::warn!("the tick's lease lapsed and is no longer this scheduler's; its publish checks the tick again");
                    return;
                }
                Err(e) => tracing::warn!("cannot read the tick's lease: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Lease {
    /// Stops renewing and removes the lease, if it is still this scheduler's. A failure to
    /// remove it is logged: the lease then lapses by itself.
    pub async fn release(mut self) {
        self.renewer.abort();
        self.released = true;
        remove(&self.remote, &self.key, &self.id).await;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
        if self.released {
            return;
        }
        let (remote, key, id) = (self.remote.clone(), self.key.clone(), self.id.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { remove(&remote, &key, &id).await });
            }
            Err(_) => {
                tracing::warn!("the tick's lease was dropped outside a runtime; it will lapse")
            }
        }
    }
}

/// Removes the claim `id` under `key`, if it is still the one there.
async fn remove(remote: &RemoteCatalog, key: &str, id: &str) {
    for _ in 0..ATTEMPTS {
        let (control, claim) = match current_claim(remote, key).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!("cannot release the tick's lease (it will lapse): {e}");
                return;
            }
        };
        if claim.is_none_or(|c| c.id != id) {
            return;
        }
        match set_control_property(remote, &control, key, None).await {
            Ok(Swap::Moved(_)) => return,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!("cannot release the tick's lease (it will lapse): {e}");
                return;
            }
        }
    }
}
