//! Values built from constants, bounded: a query may not ask a scalar function to build a
//! value larger than [`MAX_CONSTANT_BYTES`] out of its own constants
//! (`unnest(range(1, 2000000000))`, `repeat('x', 2000000000)`, `lpad('x', 2000000000)`,
//! `array_repeat(1, 1000000000)`, or a `replace` whose replacement is itself such a value).
//!
//! DataFusion's memory pool accounts for operators, not for what a scalar function allocates,
//! and its optimizer folds constant calls while planning: such a value would be built before
//! any limit could see it. So the gate estimates, from the unoptimized plan, how large each
//! of these functions' results would be, and refuses the statement naming the function.
//! Sizes that depend on a column are bounded by the data (and by the process's limits), not
//! here. This is a first line only: `pipeline query` and the MCP server also run each query
//! in a child process with a memory limit.

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, LogicalPlan, Operator};

/// The largest value (bytes of text, or 8 bytes per array element) one call may build from
/// constants: 64 MiB, so `range` up to 8 million elements and a `repeat` of 64 MiB pass.
pub const MAX_CONSTANT_BYTES: u128 = 64 << 20;

/// The functions whose result size follows from their arguments (DataFusion 53's names;
/// aliases such as `list_repeat` plan to these).
const SIZED: &[&str] = &[
    "range",
    "generate_series",
    "repeat",
    "lpad",
    "rpad",
    "array_repeat",
    "array_resize",
    "replace",
    "regexp_replace",
];

/// A function call of the plan that would build too large a value: its name and estimate.
#[derive(Debug, PartialEq)]
pub struct TooLarge {
    pub function: String,
    pub bytes: u128,
}

/// The first call in `plan` (its subqueries included) that would build more than
/// [`MAX_CONSTANT_BYTES`] from constants.
pub fn too_large_in_plan(plan: &LogicalPlan) -> Option<TooLarge> {
    let mut found = None;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|expr| {
            found = too_large(expr);
            Ok(stop_if(found.is_some()))
        })?;
        Ok(stop_if(found.is_some()))
    });
    found
}

/// The first call in `expr` that would build more than [`MAX_CONSTANT_BYTES`] from
/// constants.
pub fn too_large(expr: &Expr) -> Option<TooLarge> {
    let mut found = None;
    let _ = expr.apply(|e| {
        if let Expr::ScalarFunction(call) = e {
            let name = call.func.name();
            let bytes = size(e);
            if SIZED.contains(&name) && bytes > MAX_CONSTANT_BYTES {
                found = Some(TooLarge {
                    function: name.to_string(),
                    bytes,
                });
            }
        }
        Ok(stop_if(found.is_some()))
    });
    found
}

fn stop_if(stop: bool) -> TreeNodeRecursion {
    if stop {
        TreeNodeRecursion::Stop
    } else {
        TreeNodeRecursion::Continue
    }
}

/// The bytes `expr` builds from constants: a literal's own size, a sized function's result
/// as its constant arguments say, the largest of its arguments for any other call, and 0 for
/// what depends on data.
fn size(expr: &Expr) -> u128 {
    match expr {
        Expr::Literal(value, _) => literal_size(value),
        Expr::Alias(alias) => size(&alias.expr),
        Expr::Cast(c) => size(&c.expr),
        Expr::TryCast(c) => size(&c.expr),
        Expr::ScalarFunction(call) => call_size(call.func.name(), &call.args),
        _ => 0,
    }
}

fn literal_size(value: &ScalarValue) -> u128 {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => s.len() as u128,
        ScalarValue::Null => 0,
        _ => 8,
    }
}

/// What a call of `name` over `args` builds, as far as constants tell.
fn call_size(name: &str, args: &[Expr]) -> u128 {
    let arg = |i: usize| args.get(i).map(size).unwrap_or(0);
    let count = |i: usize| args.get(i).and_then(integer).map(|n| n.max(0) as u128);
    match name {
        "repeat" => count(1).map_or(0, |n| arg(0).max(1).saturating_mul(n)),
        // Up to 4 bytes per character.
        "lpad" | "rpad" => count(1).map_or(0, |n| arg(0).max(n.saturating_mul(4))),
        "array_repeat" => count(1).map_or(0, |n| arg(0).max(8).saturating_mul(n)),
        "array_resize" => count(1).map_or(0, |n| arg(0).max(n.saturating_mul(arg(2).max(8)))),
        "range" | "generate_series" => range_elements(args).saturating_mul(8),
        "replace" => {
            let from = arg(1).max(1);
            arg(0).saturating_add((arg(0) / from).saturating_mul(arg(2)))
        }
        // A pattern may match between every two characters.
        "regexp_replace" => arg(0).saturating_add((arg(0) + 1).saturating_mul(arg(2))),
        _ => args.iter().map(size).max().unwrap_or(0),
    }
}

/// How many elements `range`/`generate_series` over integer constants yields: `(end)`,
/// `(start, end)` or `(start, end, step)`; 0 when an argument is not an integer constant.
fn range_elements(args: &[Expr]) -> u128 {
    let ints: Option<Vec<i128>> = args.iter().map(integer).collect();
    let (start, end, step) = match ints.as_deref() {
        Some([end]) => (0, *end, 1),
        Some([start, end]) => (*start, *end, 1),
        Some([start, end, step]) => (*start, *end, *step),
        _ => return 0,
    };
    if step == 0 {
        return 0;
    }
    let span = (end - start) / step;
    span.max(0) as u128 + 1
}

/// The value of an integer constant expression (literals, `-`, `+ - * /`, casts).
fn integer(expr: &Expr) -> Option<i128> {
    match expr {
        Expr::Literal(value, _) => match value {
            ScalarValue::Int8(Some(v)) => Some(*v as i128),
            ScalarValue::Int16(Some(v)) => Some(*v as i128),
            ScalarValue::Int32(Some(v)) => Some(*v as i128),
            ScalarValue::Int64(Some(v)) => Some(*v as i128),
            ScalarValue::UInt8(Some(v)) => Some(*v as i128),
            ScalarValue::UInt16(Some(v)) => Some(*v as i128),
            ScalarValue::UInt32(Some(v)) => Some(*v as i128),
            ScalarValue::UInt64(Some(v)) => Some(*v as i128),
            ScalarValue::Float64(Some(v)) if v.is_finite() => Some(*v as i128),
            ScalarValue::Float32(Some(v)) if v.is_finite() => Some(*v as i128),
            _ => None,
        },
        Expr::Negative(inner) => integer(inner).map(|v| -v),
        Expr::Cast(c) => integer(&c.expr),
        Expr::TryCast(c) => integer(&c.expr),
        Expr::Alias(alias) => integer(&alias.expr),
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (l, r) = (integer(left)?, integer(right)?);
            match op {
                Operator::Plus => l.checked_add(r),
                Operator::Minus => l.checked_sub(r),
                Operator::Multiply => l.checked_mul(r),
                Operator::Divide if r != 0 => Some(l / r),
                _ => None,
            }
        }
        _ => None,
    }
}
