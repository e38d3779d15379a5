//! `[maintenance]`: sizes, counts and durations, each checked with its position.

use std::time::Duration;

use toml::Spanned;

use super::position::Positions;
use super::raw::RawMaintenance;
use crate::error::Result;
use crate::spec::expect::parse_duration_micros;
use crate::spec::maintenance::Maintenance;

pub(super) fn maintenance(at: &Positions, raw: &RawMaintenance) -> Result<Maintenance> {
    let defaults = Maintenance::default();
    let megabytes = |raw: &Option<Spanned<u64>>, key: &str| -> Result<Option<usize>> {
        match raw {
            None => Ok(None),
            Some(mb) if *mb.get_ref() == 0 => Err(at.error(
                mb.span(),
                format!("{key} must be at least 1"),
                Some(format!("a size in MiB, e.g. {key} = 128")),
            )),
            Some(mb) => Ok(Some(*mb.get_ref() as usize * 1024 * 1024)),
        }
    };
    let at_least = |raw: &Option<Spanned<u64>>, key: &str, min: u64, default: usize| match raw {
        None => Ok(default),
        Some(n) if *n.get_ref() < min => {
            Err(at.error(n.span(), format!("{key} must be at least {min}"), None))
        }
        Some(n) => Ok(*n.get_ref() as usize),
    };
    let expire_older_than = match &raw.expire_older_than {
        None => defaults.expire_older_than,
        Some(text) => match parse_duration_micros(text.get_ref()) {
            Some(micros) if micros >= 0 => Duration::from_micros(micros as u64),
            _ => {
                return Err(at.error(
                    text.span(),
                    format!("`{}` is not a duration", text.get_ref()),
                    Some("write a number and a unit: 12h, 5d (0s expires every snapshot beyond keep_last)".into()),
                ))
            }
        },
    };
    Ok(Maintenance {
        target_file_size: megabytes(&raw.target_file_size_mb, "target_file_size_mb")?,
        small_file_size: megabytes(&raw.small_file_mb, "small_file_mb")?,
        min_input_files: at_least(
            &raw.min_input_files,
            "min_input_files",
            2,
            defaults.min_input_files,
        )?,
        expire_older_than,
        keep_last: at_least(&raw.keep_last, "keep_last", 1, defaults.keep_last)?,
        max_manifests: at_least(
            &raw.max_manifests,
            "max_manifests",
            1,
            defaults.max_manifests,
        )?,
        after_run: raw.after_run.unwrap_or(defaults.after_run),
    })
}
