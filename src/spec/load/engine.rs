//! `[engine]`: `type` (`local` or `ballista`), the scheduler's `url`, `partitions`.

use super::position::Positions;
use super::raw::RawEngine;
use crate::error::Result;
use crate::spec::engine::{scheduler_url, BallistaEngine, Engine};

pub(super) fn engine(at: &Positions, raw: &RawEngine) -> Result<Engine> {
    let partitions = match &raw.partitions {
        None => BallistaEngine::DEFAULT_PARTITIONS,
        Some(n) if *n.get_ref() == 0 || *n.get_ref() > 10_000 => {
            return Err(at.error(
                n.span(),
                format!("partitions = {} is out of range", n.get_ref()),
                Some("how many partitions (tasks) each query gets on the cluster, 1 to 10000; about the cluster's task slots, e.g. partitions = 16".into()),
            ))
        }
        Some(n) => *n.get_ref() as usize,
    };
    match raw.kind.get_ref().as_str() {
        "local" => {
            if let Some(url) = &raw.url {
                return Err(at.error(
                    url.span(),
                    "a local engine has no url".into(),
                    Some("set type = \"ballista\" to run transforms on the scheduler at this url".into()),
                ));
            }
            Ok(Engine::Local)
        }
        "ballista" => {
            let Some(url) = &raw.url else {
                return Err(at.error(
                    raw.kind.span(),
                    "a ballista engine needs the scheduler's url".into(),
                    Some("e.g. url = \"df://scheduler-host:50050\" (started with `pipeline scheduler`)".into()),
                ));
            };
            let url = scheduler_url(url.get_ref()).map_err(|message| {
                at.error(url.span(), message, None)
            })?;
            Ok(Engine::Ballista(BallistaEngine { url, partitions }))
        }
        other => Err(at.error(
            raw.kind.span(),
            format!("unknown engine `{other}`"),
            Some("\"local\" (this machine, the default) or \"ballista\" (a DataFusion Ballista cluster)".into()),
        )),
    }
}
