//! Which tables a `[[reader]]` reads: those its SQL references (resolved by DataFusion's parser
//! through the SQL gate, as `pipeline plan` resolves them), or those its columns name.

use crate::engine::{admit, Entry};
use crate::spec::{ColumnRef, Reader, ReaderUses, TableName};

/// The `namespace.table`s `reader` reads (none when the SQL gate refuses its SQL).
pub fn tables_read_by(reader: &Reader) -> Vec<TableName> {
    match &reader.uses {
        ReaderUses::Sql(sql) => admit(sql, Entry::Reader)
            .map(|admitted| {
                admitted
                    .tables()
                    .iter()
                    .filter_map(|t| TableName::parse(&t.to_string().to_lowercase()))
                    .collect()
            })
            .unwrap_or_default(),
        ReaderUses::Columns(columns) => columns
            .iter()
            .filter_map(|c| ColumnRef::parse(c).map(|c| c.table))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::tables_read_by;
    use crate::spec::{Origin, Reader, ReaderUses};

    fn mentions(sql: &str, table: &str) -> bool {
        let reader = Reader {
            name: "r".into(),
            owner: None,
            kind: None,
            uses: ReaderUses::Sql(sql.into()),
            origin: Origin {
                file: "pipelines/p.toml".into(),
                line: 1,
            },
        };
        tables_read_by(&reader)
            .iter()
            .any(|t| t.to_string() == table)
    }

    #[test]
    fn a_table_is_mentioned_as_a_whole_name() {
        assert!(mentions(
            "SELECT month FROM gold.monthly_revenue",
            "gold.monthly_revenue"
        ));
        assert!(mentions("select * from GOLD.X\nwhere 1=1", "gold.x"));
        assert!(!mentions("SELECT * FROM gold.xy", "gold.x"));
        assert!(!mentions("SELECT * FROM old_gold.x", "gold.x"));
        // Named in a string or a comment is not read.
        assert!(!mentions(
            "SELECT 'gold.x' AS s FROM gold.y -- gold.x",
            "gold.x"
        ));
    }
}
