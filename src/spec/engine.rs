//! `[engine]`: where a pipeline's transforms run. On this machine (`local`, the default), or
//! on an Apache DataFusion Ballista cluster (`ballista`, with the scheduler's `url`). Ingest
//! jobs, audits and the publish always run in the `pipeline` process.

/// Where transforms run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Engine {
    /// In this process, on its cores.
    #[default]
    Local,
    /// On a Ballista cluster.
    Ballista(BallistaEngine),
}

/// A Ballista cluster to run transforms on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BallistaEngine {
    /// The scheduler, `df://host:port`.
    pub url: String,
    /// Most partitions of a query on the cluster: file groups of a scan, shuffle partitions,
    /// parallel writers (each a task; tasks run on the executors' slots). A query gets one
    /// per [`BallistaEngine::ROWS_PER_PARTITION`] input rows, up to this.
    pub partitions: usize,
}

impl BallistaEngine {
    /// Partitions when `[engine]` does not say (Ballista's own default).
    pub const DEFAULT_PARTITIONS: usize = 16;

    /// Input rows a query gets one partition (task per stage) for: a task's fixed cost (its
    /// plan sent, decoded and scheduled, its shuffle files) is paid per partition, so small
    /// inputs get few.
    pub const ROWS_PER_PARTITION: u64 = 1_000_000;

    /// The partitions of a query reading `input_rows` rows: one per
    /// [`Self::ROWS_PER_PARTITION`], at least one, at most [`Self::partitions`].
    pub fn partitions_for(&self, input_rows: u64) -> usize {
        let wanted = input_rows.div_ceil(Self::ROWS_PER_PARTITION).max(1);
        usize::try_from(wanted).map_or(self.partitions, |w| w.min(self.partitions))
    }
}

impl Engine {
    /// The engine `text` names on the command line (`--engine`): `local`, `ballista` (the
    /// spec's `[engine]` cluster, or `spec_default`'s url) or a scheduler URL
    /// (`df://host:port`). `Err` says what is wrong.
    pub fn parse_choice(text: &str, spec: &Engine) -> Result<Engine, String> {
        match text.trim() {
            "local" => Ok(Engine::Local),
            "ballista" => match spec {
                Engine::Ballista(b) => Ok(Engine::Ballista(b.clone())),
                Engine::Local => Err(
                    "--engine ballista needs the scheduler: give its URL (--engine df://host:50050) or set [engine] type = \"ballista\" and url in the spec".into(),
                ),
            },
            url => {
                let url = scheduler_url(url)?;
                let partitions = match spec {
                    Engine::Ballista(b) => b.partitions,
                    Engine::Local => BallistaEngine::DEFAULT_PARTITIONS,
                };
                Ok(Engine::Ballista(BallistaEngine { url, partitions }))
            }
        }
    }

    /// `local` or the scheduler's URL.
    pub fn describe(&self) -> String {
        match self {
            Engine::Local => "local".into(),
            Engine::Ballista(b) => format!("ballista at {}", b.url),
        }
    }
}

/// `url` checked as a scheduler URL: `df://host:port` (or `df://host`, port 50050).
pub fn scheduler_url(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("df://").ok_or_else(|| {
        format!("`{url}` is not an engine: say `local`, `ballista` or the scheduler's URL, df://host:50050")
    })?;
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    if host.is_empty() || host.contains('/') {
        return Err(format!("`{url}` names no host: write df://host:50050"));
    }
    if let Some(port) = port {
        if port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err(format!("`{url}`: `{port}` is not a port"));
        }
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_inputs_get_few_partitions() {
        let b = BallistaEngine {
            url: "df://h".into(),
            partitions: 16,
        };
        assert_eq!(b.partitions_for(0), 1);
        assert_eq!(b.partitions_for(100_000), 1);
        assert_eq!(b.partitions_for(1_000_001), 2);
        assert_eq!(b.partitions_for(5_000_000), 5);
        assert_eq!(b.partitions_for(u64::MAX), 16);
    }

    #[test]
    fn choices_on_the_command_line() {
        let spec = Engine::Ballista(BallistaEngine {
            url: "df://cluster:50050".into(),
            partitions: 4,
        });
        assert_eq!(Engine::parse_choice("local", &spec), Ok(Engine::Local));
        assert_eq!(Engine::parse_choice("ballista", &spec), Ok(spec.clone()));
        assert!(Engine::parse_choice("ballista", &Engine::Local)
            .unwrap_err()
            .contains("df://"));
        assert_eq!(
            Engine::parse_choice("df://h:7", &spec),
            Ok(Engine::Ballista(BallistaEngine {
                url: "df://h:7".into(),
                partitions: 4
            }))
        );
        assert_eq!(
            Engine::parse_choice("df://h", &Engine::Local),
            Ok(Engine::Ballista(BallistaEngine {
                url: "df://h".into(),
                partitions: BallistaEngine::DEFAULT_PARTITIONS
            }))
        );
        for bad in ["spark", "http://h:1", "df://", "df://h:x", "df://h:0"] {
            assert!(Engine::parse_choice(bad, &spec).is_err(), "{bad}");
        }
    }
}
