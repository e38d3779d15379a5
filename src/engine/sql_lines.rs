//! Where in a SQL text a name is written: the lines an error or a report points at when
//! DataFusion's message carries no position (`No field named x`, a table that does not
//! exist, a cycle through a table).

/// Lines of `sql` (1-based, in order) that name `name` as a whole word, in any case, outside
/// `--` comments. A dotted name (`ns.table`) must stand whole: `x.ns.table` does not name it;
/// a bare one may be qualified (`t.col` names `col`).
pub fn lines_naming(sql: &str, name: &str) -> Vec<usize> {
    let name = name.to_lowercase();
    if name.is_empty() {
        return Vec::new();
    }
    let dotted = name.contains('.');
    let is_word = |c: Option<char>| {
        c.is_some_and(|c| c.is_alphanumeric() || c == '_' || (dotted && c == '.'))
    };
    sql.lines()
        .enumerate()
        .filter(|(_, line)| {
            let code = line.split("--").next().unwrap_or("").to_lowercase();
            code.match_indices(&name).any(|(at, _)| {
                !is_word(code[..at].chars().next_back())
                    && !is_word(code[at + name.len()..].chars().next())
            })
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// The first line of `sql` (1-based) that names `name`, as [`lines_naming`] finds them.
pub fn line_naming(sql: &str, name: &str) -> Option<usize> {
    lines_naming(sql, name).into_iter().next()
}

/// For a message naming something in quotes (`Invalid function 'foo'`, `table 'x' not found`,
/// ``reads table `ns.t` ``), the first line of `sql` naming the first such name.
pub fn line_of_quoted_name(sql: &str, message: &str) -> Option<usize> {
    for quote in ['\'', '"', '`'] {
        for name in message.split(quote).skip(1).step_by(2) {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
            {
                continue;
            }
            let line = line_naming(sql, name)
                .or_else(|| line_naming(sql, name.rsplit('.').next().unwrap_or(name)));
            if line.is_some() {
                return line;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_whole_in_any_case_outside_comments() {
        let sql = "SELECT o.Amount -- amount\nFROM bronze.orders o\nJOIN x.bronze.orders y ON true\n-- bronze.orders\nWHERE amount_2 > 0";
        assert_eq!(lines_naming(sql, "amount"), [1]);
        assert_eq!(lines_naming(sql, "bronze.orders"), [2]);
        assert_eq!(line_naming(sql, "nothing"), None);
        assert_eq!(
            line_of_quoted_name(sql, "reads table `bronze.orders`, which"),
            Some(2)
        );
        assert_eq!(
            line_of_quoted_name(sql, "Invalid function 'amount_2'"),
            Some(5)
        );
    }
}
