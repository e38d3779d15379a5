//! The last step of maintenance: the files the published expiry freed, and the files a killed
//! run or maintenance left in the tables' folders (nothing references them), deleted through
//! the one deletion path (`commit::deletion`), with every pipeline of the project held off.
//! A command holding only its own pipeline's lock (maintenance after a run) takes the others
//! without waiting; when one is busy, nothing is deleted now and the next `maintain` does it.

use std::time::Duration;

use super::report::TableMaintenance;
use crate::catalog::PipelineCatalog;
use crate::commit::{named_by_a_run, Deleter, Kept, Unlisted};
use crate::error::Result;
use crate::operation::open::Held;
use crate::spec::Pipeline;

/// What the deletion step needs: the locks held, how old an unreferenced file must be, whether
/// this is a purge, and the location of each maintained table (in the order of the reports).
pub(super) struct Cleanup<'a> {
    pub held: &'a Held,
    pub unreferenced_age: Duration,
    /// A purge also deletes younger unreferenced files a run of this engine named (a killed
    /// run's data files may hold the erased rows) and lists, as kept, the younger ones it
    /// leaves: they may be another writer's, in flight.
    pub purging: bool,
    pub locations: &'a [String],
}

impl Cleanup<'_> {
    /// Deletes `freed` (per report index, the files the published expiry freed) and every
    /// table's unreferenced files, counting both into `reports`.
    pub(super) async fn run(
        &self,
        catalog: &PipelineCatalog,
        pipeline: &Pipeline,
        freed: Vec<(usize, Vec<String>)>,
        reports: &mut [TableMaintenance],
    ) -> Result<()> {
        // Remote storage is not listed: with nothing freed there is nothing to look up.
        let nothing_freed = freed.iter().all(|(_, files)| files.is_empty());
        if nothing_freed && catalog.local_warehouse().is_none() {
            return Ok(());
        }
        let mut others = None;
        let Some(locks) = self
            .held
            .for_deleting(catalog, &pipeline.project_dir, &mut others)?
        else {
            for (i, files) in freed {
                reports[i].undeleted_files += files.len() as u64;
                reports[i].note = Some(
                    "another pipeline of the project is running: the freed files are deleted by the next `pipeline maintain`".into(),
                );
            }
            return Ok(());
        };
        let clock = std::time::Instant::now();
        let deleter = Deleter::new(catalog, locks).await?;
        tracing::debug!(
            ms = clock.elapsed().as_millis() as u64,
            files = deleter.survey().live().len(),
            "maintain: every live file of the catalog surveyed"
        );
        for (i, files) in freed {
            let done = deleter.delete(&files).await;
            let report = &mut reports[i];
            report.deleted_files += done.deleted;
            report.undeleted_files += (done.kept.len() + done.failed.len()) as u64;
            report.kept.extend(done.kept.into_iter().chain(done.failed));
        }
        for (report, location) in reports.iter_mut().zip(self.locations) {
            let (found, young) = self.unreferenced(&deleter, location)?;
            report.kept.extend(young);
            if found.is_empty() {
                continue;
            }
            let paths: Vec<String> = found.iter().map(|f| f.path.clone()).collect();
            let done = deleter.delete(&paths).await;
            let kept: Vec<&str> = done
                .kept
                .iter()
                .chain(&done.failed)
                .map(|k| k.path.as_str())
                .collect();
            report.unreferenced_deleted += done.deleted;
            report.unreferenced_bytes += found
                .iter()
                .filter(|f| !kept.contains(&f.path.as_str()))
                .map(|f| f.bytes)
                .sum::<u64>();
            report.undeleted_files += kept.len() as u64;
            report.kept.extend(done.kept.into_iter().chain(done.failed));
        }
        tracing::debug!(
            ms = clock.elapsed().as_millis() as u64,
            "maintain: freed and unreferenced files deleted"
        );
        Ok(())
    }

    /// The unreferenced files under `location` to delete, and the younger ones a purge leaves
    /// (as kept, with why).
    fn unreferenced(
        &self,
        deleter: &Deleter<'_>,
        location: &str,
    ) -> Result<(Vec<Unlisted>, Vec<Kept>)> {
        let mut delete = Vec::new();
        let mut young = Vec::new();
        for (file, age) in deleter.survey().unreferenced_with_age(location)? {
            if age >= self.unreferenced_age || (self.purging && named_by_a_run(&file.path)) {
                delete.push(file);
            } else if self.purging {
                young.push(Kept {
                    path: file.path,
                    why: format!(
                        "nothing references it, but it is younger than {} minutes and no run of this engine named it: it may be another writer's file in flight, so it was neither searched nor deleted (`pipeline maintain` deletes it once it is that old; `pipeline orphans --delete --force --older-than 0` now, if no other writer is at work)",
                        self.unreferenced_age.as_secs() / 60
                    ),
                });
            }
        }
        Ok((delete, young))
    }
}
