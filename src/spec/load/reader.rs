//! `[[reader]]`: consumers outside the pipeline, for `pipeline plan`.

use super::position::Positions;
use super::raw::RawReader;
use crate::error::Result;
use crate::spec::column::ColumnRef;
use crate::spec::reader::{Reader, ReaderUses};

/// One `[[reader]]` table.
pub(super) fn reader(at: &Positions, raw: &RawReader) -> Result<Reader> {
    let uses = match (&raw.sql, &raw.columns) {
        (Some(sql), None) => ReaderUses::Sql(sql.clone()),
        (None, Some(columns)) if !columns.is_empty() => {
            for c in columns {
                if ColumnRef::parse(c.get_ref()).is_none() {
                    return Err(at.error(
                        c.span(),
                        format!("`{}` is not namespace.table.column", c.get_ref()),
                        Some("e.g. columns = [\"silver.customers.customer_tier\"]".into()),
                    ));
                }
            }
            ReaderUses::Columns(columns.iter().map(|c| c.get_ref().clone()).collect())
        }
        _ => {
            return Err(at.error(
                raw.name.span(),
                format!(
                    "reader `{}` needs either `sql` (the query it runs) or `columns` (the namespace.table.column it reads)",
                    raw.name.get_ref()
                ),
                None,
            ))
        }
    };
    Ok(Reader {
        name: raw.name.get_ref().clone(),
        owner: raw.owner.clone(),
        kind: raw.kind.clone(),
        uses,
        origin: at.origin(raw.name.span()),
    })
}
