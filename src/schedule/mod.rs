//! Scheduling: when a pipeline runs by itself, from its `[schedule]`. `pipeline schedule tick`
//! serves whatever is due now and exits (for system cron, systemd timers, Kubernetes
//! CronJobs); `pipeline schedule run` is a foreground scheduler; `pipeline schedule status`
//! tells where each schedule stands.
//!
//! A tick runs at most once: its run's record holds it (in the same commit as the run's
//! tables), and a tick is run only under the pipeline's run lock after checking that no record
//! holds it. Two schedulers at once, a scheduler restarted mid-run, `tick` from cron next to a
//! daemon: the record decides. A tick whose run failed for good is recorded as failed, so it is
//! not run again either. On a remote catalog a publish checks the tick again in the control table
//! it moves, so schedulers on several hosts (whose run locks do not see each other) publish a
//! tick once; a lease in the control table (`lease.rs`) keeps them from all doing its work.

pub mod clock;
pub mod daemon;
pub mod lease;
pub mod serve;
pub mod status;
pub mod ticks;

pub use clock::Clock;
pub use daemon::{run_daemon, TickObserver};
pub use serve::{serve, TickReport, TickResult};
pub use status::{status, ScheduleStatus};
