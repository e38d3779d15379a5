//! External readers (`[[reader]]` in a spec): consumers the engine cannot see (an Athena
//! view, a Glue export, a dashboard dataset), declared so that `pipeline plan` can name them,
//! with their owners, when a schema change would break them.

use super::table::Origin;

/// What a reader uses: a SELECT over catalog tables, or a list of columns.
#[derive(Debug, Clone, PartialEq)]
pub enum ReaderUses {
    /// The reader's query (`sql = "..."`); the columns it uses are read from its plan.
    Sql(String),
    /// `namespace.table.column` of every column it reads (`columns = [...]`).
    Columns(Vec<String>),
}

/// One `[[reader]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reader {
    pub name: String,
    /// Who to tell when it breaks (a team, a person, an address).
    pub owner: Option<String>,
    /// What it is, in the user's words: "athena view", "dashboard dataset".
    pub kind: Option<String>,
    pub uses: ReaderUses,
    pub origin: Origin,
}
