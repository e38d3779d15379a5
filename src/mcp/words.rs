//! Errors in an agent's words: the engine's messages name command lines (`pipeline history
//! <table>`, `--as-of`), which an agent cannot type; over MCP they name the tools and
//! arguments that do the same.

use std::sync::OnceLock;

use regex::Regex;

/// The tool that does what each command does, for an agent.
const TOOLS: [(&str, &str); 11] = [
    ("history", "the describe_table tool (its snapshots)"),
    ("describe", "the describe_table tool"),
    ("tables", "the list_tables tool"),
    ("runs", "the list_runs tool"),
    ("run-info", "the run_receipt tool"),
    ("lineage", "the lineage tool"),
    ("plan", "the plan tool"),
    ("query", "the query tool"),
    ("backfill", "the backfill_plan tool"),
    ("rollback", "the rollback tool"),
    ("validate", "the plan tool"),
];

/// Command-line flags and the tool arguments that stand for them.
const ARGUMENTS: [(&str, &str); 3] = [
    ("--as-of", "as_of"),
    ("--pipeline", "pipeline"),
    ("--run-id", "run_id"),
];

/// `message` with each quoted command line (`` `pipeline CMD ...` `` or `'pipeline CMD ...'`)
/// replaced by the tool that does it, and flags by the arguments. Commands no tool does are
/// left as they are (an operator can still run them).
pub fn agent_words(message: &str) -> String {
    static COMMAND: OnceLock<Regex> = OnceLock::new();
    let command = COMMAND.get_or_init(|| {
        Regex::new(r"[`']pipeline ([a-z-]+)[^`'\n]*[`']").expect("a valid pattern")
    });
    let mut text = command
        .replace_all(message, |c: &regex::Captures| {
            TOOLS
                .iter()
                .find(|(cmd, _)| *cmd == &c[1])
                .map(|(_, tool)| tool.to_string())
                .unwrap_or_else(|| c[0].to_string())
        })
        .into_owned();
    for (flag, argument) in ARGUMENTS {
        text = text.replace(flag, argument);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::agent_words;

    #[test]
    fn commands_become_tools_and_flags_arguments() {
        assert_eq!(
            agent_words("--as-of 42: no table in the query has that snapshot; `pipeline history <table>` lists snapshot ids"),
            "as_of 42: no table in the query has that snapshot; the describe_table tool (its snapshots) lists snapshot ids"
        );
        assert_eq!(
            agent_words("see 'pipeline run-info RUN'"),
            "see the run_receipt tool"
        );
        assert_eq!(
            agent_words("run `pipeline orphans --delete`"),
            "run `pipeline orphans --delete`"
        );
    }
}
