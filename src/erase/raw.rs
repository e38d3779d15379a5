//! The quarantined raw lines of an ingest that hold an erase's subject: each line's fields
//! read as the ingest reads its files (`ingest::RawFields`), typed as the bronze table types
//! them (a field that does not parse is NULL), the condition evaluated on them, the matching
//! lines removed copy-on-write.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch, StringArray, StringBuilder,
};
use arrow::compute::CastOptions;
use arrow::datatypes::{Field, Schema};
use datafusion::physical_expr::PhysicalExpr;
use iceberg::arrow::schema_to_arrow_schema;

use crate::catalog::PipelineCatalog;
use crate::dml::rewrite_rows::{compile_condition, true_rows, Edit, Rewrite, RewrittenTable};
use crate::erase::subject::condition_columns;
use crate::error::{Error, Result};
use crate::ingest::RawFields;
use crate::spec::{IngestJob, Pipeline, TableName};

/// `file (lines 3, 7), other (line 2)`: where unsearched lines are, never what they hold.
fn by_file(lines: &HashSet<(String, i64)>) -> String {
    let mut files: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for (file, line) in lines {
        files.entry(file.as_str()).or_default().push(*line);
    }
    files
        .into_iter()
        .map(|(file, mut lines)| {
            lines.sort_unstable();
            let lines: Vec<String> = lines.iter().map(i64::to_string).collect();
            let word = if lines.len() == 1 { "line" } else { "lines" };
            format!("{file} ({word} {})", lines.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The condition's columns, typed as the bronze table `bronze` types them (each nullable).
fn typed_columns(bronze: &Schema, condition: &str) -> Result<Arc<Schema>> {
    let mut fields = Vec::new();
    for column in condition_columns(condition)? {
        let field = bronze.field_with_name(&column)?;
        fields.push(Field::new(column, field.data_type().clone(), true));
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// An erase condition over the raw lines of a quarantine table: each line's fields read as
/// the ingest reads its files, typed as the bronze table types them; the lines that could not
/// be read (or typed) are kept, by why.
struct RawMatcher<'a> {
    quarantine: &'a TableName,
    condition: &'a str,
    /// The condition's columns, typed as the bronze table types them.
    typed: Arc<Schema>,
    physical: Arc<dyn PhysicalExpr>,
    reader: RawFields<'a>,
    /// The `(file, line)`s that could not be searched, by why.
    unread: BTreeMap<String, HashSet<(String, i64)>>,
}

impl RawMatcher<'_> {
    /// True where a quarantined line of `batch` (by its `source_file`, `raw` and `line`) makes
    /// the condition true; NULL (a field not read) is no match.
    fn matches(&mut self, batch: &RecordBatch) -> Result<BooleanArray> {
        let quarantine = self.quarantine;
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .ok_or_else(|| Error::table_msg(quarantine, format!("has no `{name}` column")))
        };
        // Strings may come as views (tables are read so): as `Utf8` either way.
        let text = |name: &str| -> Result<arrow::array::StringArray> {
            let column = arrow::compute::cast(column(name)?, &arrow::datatypes::DataType::Utf8)?;
            Ok(column.as_string::<i32>().clone())
        };
        let files = text("source_file")?;
        let raws = text("raw")?;
        let lines = column("line")?
            .as_primitive::<arrow::datatypes::Int64Type>()
            .clone();
        let typed = self.typed.clone();
        let mut arrays = Vec::new();
        for field in typed.fields() {
            arrays.push(self.typed_field(field, &files, &raws, &lines)?);
        }
        let fields = RecordBatch::try_new(typed, arrays)?;
        true_rows(self.physical.as_ref(), &fields, self.condition)
    }

    /// The values of `field` on the lines (`files`, `raws`, `lines`), trimmed and cast to its
    /// type (NULL where a field is missing or does not parse); a line whose field cannot be
    /// read, or does not read as its type, is added to `unread`.
    fn typed_field(
        &mut self,
        field: &Field,
        files: &StringArray,
        raws: &StringArray,
        lines: &Int64Array,
    ) -> Result<ArrayRef> {
        let cast = CastOptions {
            safe: true,
            ..Default::default()
        };
        let mut text = StringBuilder::new();
        for i in 0..files.len() {
            match self
                .reader
                .field(files.value(i), raws.value(i), field.name())
            {
                Ok(value) => text.append_option(value.map(|v| v.trim().to_string())),
                Err(why) => {
                    self.unread
                        .entry(why)
                        .or_default()
                        .insert((files.value(i).to_string(), lines.value(i)));
                    text.append_null();
                }
            }
        }
        let text = text.finish();
        let typed_values = arrow::compute::cast_with_options(&text, field.data_type(), &cast)?;
        // A field that is there but does not read as the bronze type (an id `C-7` where
        // a long is declared) cannot be compared: the line is listed, never passed over.
        for i in 0..text.len() {
            if text.is_valid(i) && typed_values.is_null(i) {
                self.unread
                    .entry(format!(
                        "its `{}` does not read as {}",
                        field.name(),
                        field.data_type()
                    ))
                    .or_default()
                    .insert((files.value(i).to_string(), lines.value(i)));
            }
        }
        Ok(typed_values)
    }
}

/// The raw lines of `job`'s quarantine table whose fields make `condition` true, removed. Each
/// line's fields are read as the ingest reads its files and typed as the bronze table types
/// them (a field that does not parse is NULL). Also says which lines could not be read.
pub(crate) async fn raw_lines(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    job: &IngestJob,
    run_id: &str,
    condition: &str,
    plan_only: bool,
) -> Result<(RewrittenTable, Vec<String>)> {
    let quarantine = job.table.quarantine();
    let bronze = catalog.load_existing(&job.table).await?;
    let bronze = schema_to_arrow_schema(bronze.metadata().current_schema())?;
    let typed = typed_columns(&bronze, condition)?;
    let (_, _, physical) = compile_condition(&typed, condition)?;
    let mut raw = RawMatcher {
        quarantine: &quarantine,
        condition,
        typed,
        physical,
        reader: RawFields::new(job, &pipeline.project_dir),
        unread: BTreeMap::new(),
    };
    let mut matcher = |batch: &RecordBatch| raw.matches(batch);
    let part = Rewrite {
        catalog,
        pipeline: &pipeline.name,
        run_id,
        table: &quarantine,
        prune: None,
        columns: ["source_file", "raw", "line"].map(String::from).to_vec(),
        edit: Edit::Delete,
        job: "erase",
        plan_only,
        ledger: Vec::new(),
    }
    .stage(&mut matcher)
    .await?;
    let unread = raw
        .unread
        .into_iter()
        .map(|(why, lines)| {
            format!(
                "{quarantine}: {} quarantined line(s) not searched ({why}): {}",
                lines.len(),
                by_file(&lines)
            )
        })
        .collect();
    Ok((part, unread))
}
