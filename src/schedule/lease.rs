//! A scheduler's claim on a tick of a pipeline on a remote catalog, so that schedulers on
//! several hosts (whose run locks, per machine, do not see each other) do not all do the
//! tick's work: a property of the control table, `pipeline.lease.<pipeline>`, set and renewed
//! by compare-and-set, holding the tick, who holds it, a renewal count and (for people) until
//! when by the holder's clock.
//!
//! The rule, safe whatever the hosts' wall clocks say (they are never compared):
//! - A scheduler takes the lease before it runs a due tick. A claim of another scheduler that
//!   is unexpired by this host's clock leaves the tick to it ([`Leased::HeldBy`]). One that
//!   looks expired is watched: it has lapsed only once it stayed unchanged for a whole lease
//!   by this host's monotonic clock; a renewal seen meanwhile means its holder lives.
//! - The holder renews it every third of the lease while the tick runs and removes it when
//!   done, or when its work ends any other way (dropped: a panic, a cancel, a timeout).
//! - Before it publishes, the holder confirms the claim ([`Tenure::confirm`]): still its own,
//!   and renewed within half a lease by its own monotonic clock (else renewed right then). A
//!   holder that lost it stops before publishing and records nothing.
//! - The lease saves work; it is not what makes a tick run once. A holder frozen between its
//!   confirmation and its commit could still publish after a takeover, and the publish's own
//!   check of the tick in the control table (`commit::publish`) refuses the second run.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::catalog::{Current, RemoteCatalog, Swap};
use crate::commit::publish::set_control_property;
use crate::error::{Error, Result};
use crate::fault::wall_now;
use crate::records::{control_table, existing_control_table};
use crate::run::Tenure;

/// How often a compare-and-set of the lease is tried before giving up.
const ATTEMPTS: u32 = 20;

/// The lease as the control table holds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Claim {
    tick: String,
    /// Host and process, for messages.
    holder: String,
    /// Unique per claim: a holder renews or removes only its own.
    id: String,
    /// By the holder's wall clock: shown to people, and a hint that a claim may have lapsed.
    expires_at: DateTime<Utc>,
    /// Counts the renewals: what a taker watches for.
    #[serde(default)]
    renewal: u64,
}

/// What taking the lease found.
pub enum Leased {
    /// This scheduler holds it (renewed in the background until [`Lease::release`]).
    Taken(Lease),
    /// Another scheduler holds it, alive: who, and until when.
    HeldBy(String),
}

/// What the holder and its renewer share.
struct Held {
    remote: Arc<RemoteCatalog>,
    key: String,
    ttl: Duration,
    /// The claim as last written; renewals are serialized by this lock.
    claim: tokio::sync::Mutex<Claim>,
    /// When the last renewal that went through started (this host's monotonic clock).
    renewed: Mutex<Instant>,
    /// Why the claim is no longer this scheduler's, once it is not.
    lost: Mutex<Option<String>>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "lease {} ({}s)", self.key, self.ttl.as_secs())
    }
}

/// A held lease. It ends with its holder's work on every path: [`Lease::release`] removes it;
/// dropped unreleased (the work panicked, was cancelled or timed out), its renewal stops at
/// once and its removal is started on the runtime (failing that, it lapses by itself).
pub struct Lease {
    held: Arc<Held>,
    renewer: tokio::task::JoinHandle<()>,
    released: bool,
}

fn key_of(pipeline: &str) -> String {
    format!("pipeline.lease.{pipeline}")
}

/// This host and process, as claims name them.
pub fn this_holder() -> String {
    format!("{} pid {}", host_name(), std::process::id())
}

/// This host's name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown host".into())
}

fn claim_in(control: &Current, key: &str) -> Option<Claim> {
    control
        .metadata
        .properties()
        .get(key)
        .and_then(|text| serde_json::from_str(text).ok())
}

/// The claim in the control table's current version (created on first use), and that version.
async fn current_claim(remote: &RemoteCatalog, key: &str) -> Result<(Current, Option<Claim>)> {
    let control = control_table(remote).await?;
    let claim = claim_in(&control, key);
    Ok((control, claim))
}

/// The claim, read without creating anything (`None` when there is no control table yet).
async fn read_claim(remote: &RemoteCatalog, key: &str) -> Result<Option<Claim>> {
    Ok(existing_control_table(remote)
        .await?
        .and_then(|control| claim_in(&control, key)))
}

/// The tick named by `pipeline`'s lease, expired or not: a tick some scheduler started to
/// serve (a holder that crashed leaves its claim to lapse). Reads only.
pub async fn claimed_tick(remote: &RemoteCatalog, pipeline: &str) -> Result<Option<DateTime<Utc>>> {
    Ok(read_claim(remote, &key_of(pipeline))
        .await?
        .and_then(|c| DateTime::parse_from_rfc3339(&c.tick).ok())
        .map(|t| t.with_timezone(&Utc)))
}

/// Who claims `pipeline`'s tick, as people read it (whether the claim looks expired by this
/// host's clock included); `None` when no scheduler does. Reads only.
pub async fn holder_of(remote: &RemoteCatalog, pipeline: &str) -> Result<Option<String>> {
    Ok(read_claim(remote, &key_of(pipeline)).await?.map(|c| {
        if c.expires_at > wall_now() {
            describe(&c)
        } else {
            format!(
                "{} (serving tick {}; its claim expired at {} by its clock: the holder may have crashed, another scheduler takes over after watching it for a lease)",
                c.holder,
                c.tick,
                c.expires_at.to_rfc3339()
            )
        }
    }))
}

fn describe(claim: &Claim) -> String {
    format!(
        "{} (serving tick {}, claim valid until {} by its clock)",
        claim.holder,
        claim.tick,
        claim.expires_at.to_rfc3339()
    )
}

fn backoff(attempt: u32) -> Duration {
    let base = 50u64 << attempt.min(5);
    let jitter = uuid::Uuid::new_v4().as_u128() as u64 % base;
    Duration::from_millis(base + jitter)
}

/// Takes the lease of `pipeline`'s tick `tick` for `ttl`, unless another scheduler holds it.
pub async fn take(
    remote: Arc<RemoteCatalog>,
    pipeline: &str,
    tick: &str,
    ttl: Duration,
) -> Result<Leased> {
    let key = key_of(pipeline);
    let mine = Claim {
        tick: tick.to_string(),
        holder: this_holder(),
        id: uuid::Uuid::new_v4().to_string(),
        expires_at: wall_now(),
        renewal: 0,
    };
    // A claim watched until it lapsed (then taken over by compare-and-set).
    let mut lapsed: Option<Claim> = None;
    for attempt in 0..ATTEMPTS {
        let (control, claim) = current_claim(&remote, &key).await?;
        match claim {
            // An earlier attempt of ours went through though its answer was lost.
            Some(found) if found.id == mine.id => {
                return Ok(Leased::Taken(hold(remote, key, found, ttl)))
            }
            Some(other) if lapsed.as_ref() == Some(&other) => {}
            Some(other) if other.expires_at > wall_now() => {
                return Ok(Leased::HeldBy(describe(&other)))
            }
            Some(other) => match watch(&remote, &key, &other, ttl).await? {
                Some(alive) => return Ok(Leased::HeldBy(alive)),
                None => {
                    lapsed = Some(other);
                    continue;
                }
            },
            None => {}
        }
        let mut claim = mine.clone();
        claim.expires_at = wall_now() + ttl;
        let started = Instant::now();
        match set_claim(&remote, &control, &key, &claim).await? {
            Swap::Moved(_) | Swap::AlreadyThere => {
                tracing::debug!(pipeline, tick, "lease taken");
                let lease = hold(remote, key, claim, ttl);
                *lock(&lease.held.renewed) = started;
                return Ok(Leased::Taken(lease));
            }
            Swap::Conflict => tokio::time::sleep(backoff(attempt)).await,
        }
    }
    Err(Error::Conflict {
        table: crate::records::control_name().to_string(),
        message: "the control table kept changing while this scheduler tried to claim the tick"
            .into(),
    })
}

/// Watches `claim`, another scheduler's, which this host's clock says has expired (a clock
/// may be wrong): `None` once it stayed unchanged for a whole `ttl` by this host's monotonic
/// clock, or was removed (free to take); who holds it when it changed meanwhile (renewed,
/// or taken by a third scheduler: alive).
async fn watch(
    remote: &RemoteCatalog,
    key: &str,
    claim: &Claim,
    ttl: Duration,
) -> Result<Option<String>> {
    tracing::info!(
        "the claim of {} on tick {} looks expired; watching it for {}s before taking it over",
        claim.holder,
        claim.tick,
        ttl.as_secs()
    );
    let since = Instant::now();
    loop {
        tokio::time::sleep(ttl / 6).await;
        match read_claim(remote, key).await? {
            None => return Ok(None),
            Some(now) if now == *claim => {}
            Some(now) => return Ok(Some(describe(&now))),
        }
        if since.elapsed() >= ttl {
            return Ok(None);
        }
    }
}

fn set_claim<'a>(
    remote: &'a RemoteCatalog,
    control: &'a Current,
    key: &'a str,
    claim: &Claim,
) -> impl std::future::Future<Output = Result<Swap>> + Send + 'a {
    let text = serde_json::to_string(claim);
    async move {
        let text = text.map_err(|e| Error::Internal(format!("cannot encode the lease: {e}")))?;
        set_control_property(remote, control, key, Some(&text)).await
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts holding `claim` (as written): its renewer runs from now on.
fn hold(remote: Arc<RemoteCatalog>, key: String, claim: Claim, ttl: Duration) -> Lease {
    let held = Arc::new(Held {
        remote,
        key,
        ttl,
        claim: tokio::sync::Mutex::new(claim),
        renewed: Mutex::new(Instant::now()),
        lost: Mutex::new(None),
    });
    let renewer = tokio::spawn(renew(held.clone()));
    Lease {
        held,
        renewer,
        released: false,
    }
}

/// Renews the claim every third of its lease until aborted, or until it is no longer this
/// scheduler's.
async fn renew(held: Arc<Held>) {
    loop {
        tokio::time::sleep(held.ttl / 3).await;
        match held.renew_now().await {
            Ok(()) => {}
            Err(Error::LeaseLost(why)) => {
                tracing::warn!("{why}");
                return;
            }
            Err(e) => tracing::warn!(
                "cannot renew the tick's lease (the run stops before publishing unless a renewal goes through): {e}"
            ),
        }
    }
}

impl Held {
    /// One renewal, now: the claim's count and expiry moved on by compare-and-set.
    /// [`Error::LeaseLost`] when the claim is no longer this scheduler's.
    async fn renew_now(&self) -> Result<()> {
        if let Some(why) = lock(&self.lost).clone() {
            return Err(Error::LeaseLost(why));
        }
        let mut claim = self.claim.lock().await;
        let started = Instant::now();
        for attempt in 0..ATTEMPTS {
            let (control, now) = current_claim(&self.remote, &self.key).await?;
            if now.as_ref().is_none_or(|c| c.id != claim.id) {
                let why = match now {
                    Some(other) => format!(
                        "this scheduler lost its claim on tick {} to {}",
                        claim.tick,
                        describe(&other)
                    ),
                    None => format!("this scheduler's claim on tick {} was removed", claim.tick),
                };
                *lock(&self.lost) = Some(why.clone());
                return Err(Error::LeaseLost(why));
            }
            let mut next = claim.clone();
            next.renewal += 1;
            next.expires_at = wall_now() + self.ttl;
            match set_claim(&self.remote, &control, &self.key, &next).await? {
                Swap::Moved(_) | Swap::AlreadyThere => {
                    *claim = next;
                    *lock(&self.renewed) = started;
                    return Ok(());
                }
                Swap::Conflict => tokio::time::sleep(backoff(attempt)).await,
            }
        }
        Err(Error::Conflict {
            table: crate::records::control_name().to_string(),
            message: "the control table kept changing while this scheduler renewed its claim"
                .into(),
        })
    }
}

#[async_trait::async_trait]
impl Tenure for Held {
    async fn confirm(&self) -> Result<()> {
        if let Some(why) = lock(&self.lost).clone() {
            return Err(Error::LeaseLost(why));
        }
        let since = lock(&self.renewed).elapsed();
        if since < self.ttl / 2 {
            return Ok(());
        }
        match self.renew_now().await {
            Ok(()) => Ok(()),
            Err(Error::LeaseLost(why)) => Err(Error::LeaseLost(why)),
            // Still safely held (no taker can have watched it for a whole lease yet).
            Err(_) if lock(&self.renewed).elapsed() < self.ttl * 2 / 3 => Ok(()),
            Err(e) => Err(Error::LeaseLost(format!(
                "this scheduler could not renew its claim on the tick for {}s of a {}s lease: {e}",
                lock(&self.renewed).elapsed().as_secs(),
                self.ttl.as_secs()
            ))),
        }
    }
}

impl Lease {
    /// What the run confirms before it publishes.
    pub fn tenure(&self) -> Arc<dyn Tenure> {
        self.held.clone()
    }

    /// Stops renewing and removes the lease, if it is still this scheduler's. A failure to
    /// remove it is logged: the lease then lapses by itself.
    pub async fn release(mut self) {
        self.renewer.abort();
        self.released = true;
        remove(&self.held).await;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
        if self.released {
            return;
        }
        let held = self.held.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { remove(&held).await });
            }
            Err(_) => {
                tracing::warn!("the tick's lease was dropped outside a runtime; it will lapse")
            }
        }
    }
}

/// Removes the claim, if it is still this scheduler's.
async fn remove(held: &Held) {
    let id = held.claim.lock().await.id.clone();
    for attempt in 0..ATTEMPTS {
        let (control, claim) = match current_claim(&held.remote, &held.key).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!("cannot release the tick's lease (it will lapse): {e}");
                return;
            }
        };
        if claim.is_none_or(|c| c.id != id) {
            return;
        }
        match set_control_property(&held.remote, &control, &held.key, None).await {
            Ok(Swap::Moved(_)) | Ok(Swap::AlreadyThere) => return,
            Ok(Swap::Conflict) => tokio::time::sleep(backoff(attempt)).await,
            Err(e) => {
                tracing::warn!("cannot release the tick's lease (it will lapse): {e}");
                return;
            }
        }
    }
}
