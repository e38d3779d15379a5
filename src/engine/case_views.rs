//! `lower` and `upper` of `Utf8View` strings without a `String` per value.
//!
//! DataFusion 53 maps the case of a `Utf8` array whose bytes are all ASCII in one pass, but of
//! a `Utf8View` array (what its Parquet reader gives for strings) value by value through
//! `str::to_lowercase`, allocating and freeing a `String` each: `lower(trim(status))` over 5M
//! orders was 1.2 % of a full run's CPU. [`case_functions`] wrap DataFusion's two functions
//! under their own names: a `Utf8View` array is mapped value by value into the result's buffer
//! (an ASCII value byte by byte, any other through the same `str::to_lowercase` /
//! `str::to_uppercase`), giving the `Utf8` array DataFusion's gives; every other argument goes
//! to DataFusion's own function.

use std::any::Any;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature,
};

/// `lower` and `upper`, each DataFusion's own but for `Utf8View` arrays.
pub fn case_functions() -> [ScalarUDF; 2] {
    [
        ScalarUDF::from(CaseOfViews {
            inner: datafusion::functions::string::lower(),
            upper: false,
        }),
        ScalarUDF::from(CaseOfViews {
            inner: datafusion::functions::string::upper(),
            upper: true,
        }),
    ]
}

/// DataFusion's `lower` (or, with `upper`, `upper`), with its name, signature and result type.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct CaseOfViews {
    inner: Arc<ScalarUDF>,
    upper: bool,
}

impl ScalarUDFImpl for CaseOfViews {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match args.args.first() {
            Some(ColumnarValue::Array(array)) if array.data_type() == &DataType::Utf8View => {
                Ok(ColumnarValue::Array(map_case(array, self.upper)))
            }
            _ => self.inner.invoke_with_args(args),
        }
    }
}

/// Every value of `views` (a `Utf8View` array) in lower case (`upper`: upper case), as `Utf8`.
fn map_case(views: &ArrayRef, upper: bool) -> ArrayRef {
    let views = views.as_string_view();
    let bytes: usize = views.iter().flatten().map(str::len).sum();
    let mut out = StringBuilder::with_capacity(views.len(), bytes);
    let mut ascii = String::new();
    for value in views.iter() {
        match value {
            None => out.append_null(),
            Some(text) if text.is_ascii() => {
                ascii.clear();
                ascii.push_str(text);
                if upper {
                    ascii.make_ascii_uppercase();
                } else {
                    ascii.make_ascii_lowercase();
                }
                out.append_value(&ascii);
            }
            Some(text) if upper => out.append_value(text.to_uppercase()),
            Some(text) => out.append_value(text.to_lowercase()),
        }
    }
    Arc::new(out.finish())
}

#[cfg(test)]
mod tests {
    use arrow::array::{StringArray, StringViewArray};
    use arrow::datatypes::Field;
    use datafusion::config::ConfigOptions;

    use super::*;

    /// `function` of `arg` as a one-argument call over `rows` rows.
    fn call(function: &ScalarUDF, arg: ColumnarValue, rows: usize) -> ArrayRef {
        let data_type = arg.data_type();
        let args = ScalarFunctionArgs {
            args: vec![arg],
            arg_fields: vec![Arc::new(Field::new("s", data_type.clone(), true))],
            number_rows: rows,
            return_field: Arc::new(Field::new(
                "r",
                function.return_type(&[data_type]).unwrap(),
                true,
            )),
            config_options: Arc::new(ConfigOptions::default()),
        };
        function
            .invoke_with_args(args)
            .unwrap()
            .into_array(rows)
            .unwrap()
    }

    /// On views of ASCII, accented, one-to-many (`ß`, `İ`), empty, long (not inlined) and
    /// NULL values, each function gives exactly what DataFusion's gives for the same values
    /// as `Utf8`, and answers to the same name.
    #[test]
    fn views_get_what_datafusion_gives_for_the_same_strings() {
        let values = vec![
            Some("Shipped"),
            Some(" CANCELED "),
            None,
            Some(""),
            Some("Straße İstanbul ÀÉÎ"),
            Some("a value far longer than twelve bytes, Not Inlined In Its View"),
            Some("ǅ digraph"),
        ];
        let views: ArrayRef = Arc::new(StringViewArray::from(values.clone()));
        let strings: ArrayRef = Arc::new(StringArray::from(values.clone()));
        let theirs = [
            datafusion::functions::string::lower(),
            datafusion::functions::string::upper(),
        ];
        for (ours, theirs) in case_functions().iter().zip(theirs) {
            assert_eq!(ours.name(), theirs.name());
            let got = call(ours, ColumnarValue::Array(views.clone()), values.len());
            let want = call(&theirs, ColumnarValue::Array(strings.clone()), values.len());
            assert_eq!(got.data_type(), &DataType::Utf8);
            assert_eq!(got.as_ref(), want.as_ref(), "{}", ours.name());
            // Other arguments are DataFusion's own function's.
            let same = call(ours, ColumnarValue::Array(strings.clone()), values.len());
            assert_eq!(same.as_ref(), want.as_ref());
        }
    }
}
