//! Names in SQL text: plain identifiers, and quoting for the SQL the engine writes itself
//! (expectation checks, drop filters).

/// True for a plain SQL identifier: letters, digits and `_`, not starting with a digit.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A SQL identifier, double-quoted.
pub fn quote_ident(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}
