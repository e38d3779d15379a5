//! Spec and SQL errors: caught before any work starts, one clear message naming the file,
//! line and column, exit code 2.

use crate::common::Project;

const INGEST: &str = r#"[pipeline]
name = "p"

[[ingest]]
table = "bronze.t"
format = "csv"
path = "data/*.csv"
schema = { id = "long", v = "int" }
"#;

fn project_with(spec: &str, sql: &[(&str, &str)]) -> Project {
    let p = Project::empty();
    p.write("pipelines/p.toml", spec);
    p.write("data/a.csv", "id,v\n1,2\n");
    for (path, text) in sql {
        p.write(path, text);
    }
    p
}

fn error_of(p: &Project, command: &str) -> String {
    let (code, stderr) = p.fails(&[command, "p"]);
    assert_eq!(code, 2, "{stderr}");
    stderr
}

#[test]
fn unknown_key_names_file_line_and_column() {
    let p = project_with(&format!("{INGEST}partiton_by = [\"v\"]\n"), &[]);
    assert_eq!(
        error_of(&p, "validate"),
        "error: pipelines/p.toml:9:1: unknown field `partiton_by`, expected one of `table`, `format`, `path`, `schema`, `partition_by`, `on_bad_record`, `schema_evolution`, `delimiter`, `quote`, `header`, `null_values`, `target_file_size_mb`, `erase`, `description`, `columns`"
    );
}

#[test]
fn wrong_value_type_names_the_key() {
    let p = project_with(&format!("{INGEST}header = \"yes\"\n"), &[]);
    assert_eq!(
        error_of(&p, "validate"),
        "error: pipelines/p.toml:9:10: invalid type: string \"yes\", expected a boolean"
    );
}

#[test]
fn unknown_column_type_gets_a_hint() {
    let p = project_with(&INGEST.replace("\"long\"", "\"lng\""), &[]);
    assert_eq!(
        error_of(&p, "validate"),
        "error: pipelines/p.toml:8:17: unknown type `lng` for column `id`\n  hint: types: boolean, int, long, float, double, decimal(P,S), string, date, timestamp, timestamptz; append `not null` to reject NULLs"
    );
}

#[test]
fn missing_sql_file_names_the_spec_line() {
    let spec =
        format!("{INGEST}\n[[transform]]\ntable = \"silver.t\"\nsql = \"sql/p/missing.sql\"\n");
    let p = project_with(&spec, &[]);
    assert_eq!(
        error_of(&p, "validate"),
        "error: pipelines/p.toml:12:7: cannot read SQL file `sql/p/missing.sql`: no such file\n  hint: the path is relative to the project directory, e.g. \"sql/retail/silver_orders.sql\""
    );
}

#[test]
fn dependency_cycle_names_its_tables() {
    let spec = format!(
        "{INGEST}\n[[transform]]\ntable = \"silver.a\"\nsql = \"sql/p/a.sql\"\n\n[[transform]]\ntable = \"silver.b\"\nsql = \"sql/p/b.sql\"\n"
    );
    let p = project_with(
        &spec,
        &[
            (
                "sql/p/a.sql",
                "SELECT x.id FROM silver.b x JOIN bronze.t t ON x.id = t.id",
            ),
            ("sql/p/b.sql", "SELECT id FROM silver.a"),
        ],
    );
    assert_eq!(
        error_of(&p, "run"),
        "error: pipelines/p.toml: dependency cycle: silver.a -> silver.b -> silver.a (sql/p/a.sql:1 reads silver.b; sql/p/b.sql:1 reads silver.a)\n  hint: a transform cannot read, directly or through others, the table it produces"
    );
}

#[test]
fn unknown_table_is_an_error_before_any_work() {
    let spec = format!("{INGEST}\n[[transform]]\ntable = \"silver.t\"\nsql = \"sql/p/t.sql\"\n");
    let p = project_with(
        &spec,
        &[(
            "sql/p/t.sql",
            "SELECT id FROM bronze.t\nUNION ALL\nSELECT id FROM bronze.nowhere",
        )],
    );
    assert_eq!(
        error_of(&p, "run"),
        "error: sql/p/t.sql:3: reads table `bronze.nowhere`, which no job of pipeline `p` produces and which does not exist in the catalog"
    );
    assert_eq!(
        p.json(&["tables"]),
        serde_json::json!([]),
        "no work may start"
    );
}

#[test]
fn only_a_select_is_a_transform() {
    let spec = format!("{INGEST}\n[[transform]]\ntable = \"silver.t\"\nsql = \"sql/p/t.sql\"\n");
    let p = project_with(
        &spec,
        &[("sql/p/t.sql", "CREATE TABLE silver.x AS SELECT 1")],
    );
    assert_eq!(
        error_of(&p, "validate"),
        "error: sql/p/t.sql: a transform must be a SELECT (a query reading catalog tables); found `CREATE TABLE silver.x ...`"
    );
    p.write("sql/p/t.sql", "SELECT * FROM 'data/a.csv'");
    assert_eq!(
        error_of(&p, "validate"),
        "error: sql/p/t.sql: `data/a.csv` is not a catalog table: transforms read only catalog tables, written namespace.table (e.g. bronze.orders), never files or URLs"
    );
}

#[test]
fn sql_errors_name_the_sql_file_and_line() {
    let spec = format!("{INGEST}\n[[transform]]\ntable = \"silver.t\"\nsql = \"sql/p/t.sql\"\n");
    let p = project_with(
        &spec,
        &[("sql/p/t.sql", "SELECT id,\n       nope\nFROM bronze.t")],
    );
    let err = error_of(&p, "validate");
    assert!(err.starts_with("error: sql/p/t.sql:2: "), "{err}");
    assert!(err.contains("nope"), "{err}");
    p.write("sql/p/t.sql", "SELECT id\nFROM bronze.t\nWHERE id = = 1");
    let err = error_of(&p, "validate");
    assert!(err.starts_with("error: sql/p/t.sql:3: "), "{err}");
}

#[test]
fn unknown_pipeline_lists_the_known_ones() {
    let p = project_with(INGEST, &[]);
    let (code, stderr) = p.fails(&["run", "nope"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        format!(
            "error: {}: no pipeline named `nope`\n  hint: pipelines here: p",
            p.path().join("pipelines/nope.toml").display()
        )
    );
}

#[test]
fn a_pattern_matching_nothing_on_a_first_load_is_an_error() {
    let p = project_with(&INGEST.replace("data/*.csv", "data/*.tsv"), &[]);
    assert_eq!(
        error_of(&p, "run"),
        format!(
            "error: pipelines/p.toml: line 5: ingest into bronze.t: no files match `data/*.tsv`\n  hint: paths are relative to the project directory {}",
            p.path().display()
        )
    );
    assert_eq!(p.json(&["tables"]), serde_json::json!([]));
}

#[test]
fn engine_settings_are_checked_with_their_position() {
    let cases = [
        (
            "[engine]\ntype = \"spark\"\n",
            "error: pipelines/p.toml:11:8: unknown engine `spark`\n  hint: \"local\" (this machine, the default) or \"ballista\" (a DataFusion Ballista cluster)",
        ),
        (
            "[engine]\ntype = \"ballista\"\n",
            "error: pipelines/p.toml:11:8: a ballista engine needs the scheduler's url\n  hint: e.g. url = \"df://scheduler-host:50050\" (started with `pipeline scheduler`)",
        ),
        (
            "[engine]\ntype = \"ballista\"\nurl = \"http://h:50050\"\n",
            "error: pipelines/p.toml:12:7: `http://h:50050` is not an engine: say `local`, `ballista` or the scheduler's URL, df://host:50050",
        ),
        (
            "[engine]\ntype = \"ballista\"\nurl = \"df://h:50050\"\npartitions = 0\n",
            "error: pipelines/p.toml:13:14: partitions = 0 is out of range\n  hint: how many partitions (tasks) each query gets on the cluster, 1 to 10000; about the cluster's task slots, e.g. partitions = 16",
        ),
    ];
    for (section, expected) in cases {
        let p = project_with(&format!("{INGEST}\n{section}"), &[]);
        assert_eq!(error_of(&p, "validate"), expected, "{section}");
    }
    // A valid cluster spec passes, and --engine names one on the command line.
    let p = project_with(
        &format!("{INGEST}\n[engine]\ntype = \"ballista\"\nurl = \"df://h:50050\"\n"),
        &[],
    );
    p.json(&["validate", "p"]);
    let (code, stderr) = p.fails(&["run", "p", "--engine", "spark"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("`spark` is not an engine"), "{stderr}");
}

#[test]
fn what_would_fail_at_run_time_is_refused_by_validate_with_its_position() {
    let cases: Vec<(String, &str)> = vec![
        (
            INGEST.replace("schema = {", "partition_by = [\"month(id)\"]\nschema = {"),
            "needs a date or timestamp column; `id` is long",
        ),
        (
            INGEST.replace("schema = {", "partition_by = [\"bucket(2147483648, id)\"]\nschema = {"),
            "from 1 to 2147483647",
        ),
        (
            INGEST.replace("schema = {", "delimiter = '\"'\nschema = {"),
            "delimiter and quote are both",
        ),
        (
            INGEST.replace("schema = {", "delimiter = \"\\n\"\nschema = {"),
            "delimiter cannot be a line end",
        ),
        (INGEST.replace("name = \"p\"", "name = \"a/b\""), "is not a name"),
        (INGEST.replace("name = \"p\"", "name = \"../x\""), "is not a name"),
        (INGEST.replace("name = \"p\"", "name = \"\""), "is not a name"),
        (
            format!("{INGEST}\n[[expect]]\ntable = \"bronze.t\"\ncheck = \"regex\"\ncolumn = \"v\"\npattern = \"(\"\n"),
            "does not compile",
        ),
    ];
    for (spec, why) in cases {
        let p = project_with(&spec, &[]);
        let err = error_of(&p, "validate");
        assert!(err.starts_with("error: pipelines/p.toml:"), "{err}");
        let position = err["error: pipelines/p.toml:".len()..]
            .split(':')
            .next()
            .unwrap()
            .to_string();
        assert!(position.parse::<usize>().is_ok(), "no line in {err}");
        assert!(err.contains(why), "{why}: {err}");
    }
    // A transform partitioned by month of a string column: caught by validate, naming the
    // spec line, before any run writes it.
    let spec = format!(
        "{INGEST}\n[[transform]]\ntable = \"silver.t\"\nsql = \"sql/p/t.sql\"\npartition_by = [\"month(label)\"]\nmode = \"replace_partitions\"\n"
    );
    let p = project_with(
        &spec,
        &[("sql/p/t.sql", "SELECT id, 'x' AS label FROM bronze.t")],
    );
    let err = error_of(&p, "validate");
    assert!(err.contains("pipelines/p.toml:"), "{err}");
    assert!(err.contains("`label` is string"), "{err}");
}

#[test]
fn a_planning_error_names_the_line_of_what_it_names() {
    let spec = format!("{INGEST}\n[[transform]]\ntable = \"silver.t\"\nsql = \"sql/p/t.sql\"\n");
    let p = project_with(
        &spec,
        &[(
            "sql/p/t.sql",
            "SELECT id,\n       no_such_function(v) AS w\nFROM bronze.t",
        )],
    );
    let err = error_of(&p, "validate");
    assert!(err.starts_with("error: sql/p/t.sql:2: "), "{err}");
    // Errors DataFusion gives no position: a table nothing produces, a type it does not know.
    for (sql, line) in [
        (
            "SELECT id,\n  v\nFROM bronze.t\nJOIN bronze.missing m ON true",
            4,
        ),
        ("SELECT id,\n  CAST(v AS nosuchtype) AS w\nFROM bronze.t", 2),
    ] {
        p.write("sql/p/t.sql", sql);
        let err = error_of(&p, "validate");
        assert!(
            err.starts_with(&format!("error: sql/p/t.sql:{line}: ")),
            "{sql}: {err}"
        );
    }
}
