//! DataFusion's error messages as a person should read them: without internal prefixes and
//! backtrace noise.

use datafusion::error::DataFusionError;

/// DataFusion messages without their internal prefixes and backtrace noise.
pub fn clean_message(e: &DataFusionError) -> String {
    let text = e.to_string();
    let text = text.split("\nBacktrace").next().unwrap_or(&text);
    // Parser errors arrive as `SQL error: ParserError("...")`.
    if let Some(inner) = text
        .strip_prefix("SQL error: ParserError(\"")
        .and_then(|t| t.strip_suffix("\")"))
    {
        return inner.to_string();
    }
    for prefix in ["SQL error: ", "Error during planning: ", "Schema error: "] {
        if let Some(rest) = text.strip_prefix(prefix) {
            return rest.trim().to_string();
        }
    }
    text.trim().to_string()
}
