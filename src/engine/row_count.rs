//! Row counts for the optimizer. iceberg-datafusion's scan reports no statistics, so
//! DataFusion cannot tell a 5M-row fact table from a 100k-row dimension and builds hash joins
//! on whichever side the SQL names first. The snapshot summary knows each table's
//! `total-records`; [`CountedTable`] passes it on (as an inexact upper bound) so join
//! selection builds on the smaller side.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::Statistics;
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

/// A table provider that reports a known row count.
#[derive(Debug)]
pub struct CountedTable {
    inner: Arc<dyn TableProvider>,
    rows: usize,
}

impl CountedTable {
    /// Wraps `inner`, whose scans return at most `rows` rows.
    pub fn new(inner: Arc<dyn TableProvider>, rows: u64) -> CountedTable {
        CountedTable {
            inner,
            rows: rows as usize,
        }
    }
}

#[async_trait]
impl TableProvider for CountedTable {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = self.inner.scan(state, projection, filters, limit).await?;
        let rows = limit.map_or(self.rows, |l| l.min(self.rows));
        Ok(Arc::new(CountedScan { input, rows }))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<Statistics> {
        Some(Statistics::new_unknown(&self.schema()).with_num_rows(Precision::Inexact(self.rows)))
    }
}

/// A scan that reports at most `rows` rows in its statistics; execution is the inner scan's.
#[derive(Debug)]
struct CountedScan {
    input: Arc<dyn ExecutionPlan>,
    rows: usize,
}

impl DisplayAs for CountedScan {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "CountedScan: rows<={}", self.rows)
    }
}

impl ExecutionPlan for CountedScan {
    fn name(&self) -> &str {
        "CountedScan"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(CountedScan {
            input: children[0].clone(),
            rows: self.rows,
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }

    fn partition_statistics(&self, partition: Option<usize>) -> Result<Statistics> {
        let per_partition = match partition {
            None => self.rows,
            Some(_) => self.rows.div_ceil(
                self.input
                    .properties()
                    .partitioning
                    .partition_count()
                    .max(1),
            ),
        };
        Ok(
            Statistics::new_unknown(&self.schema())
                .with_num_rows(Precision::Inexact(per_partition)),
        )
    }
}
