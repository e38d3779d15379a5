//! A data file's partition as people read it: `order_date_month=2026-03/region=EU`.

use iceberg::spec::{Literal, PartitionSpec, PrimitiveLiteral, Struct, Transform};

use crate::spec::Grain;

/// `field=value` per partition field, joined by `/` (empty for an unpartitioned table).
pub fn partition_label(spec: &PartitionSpec, partition: &Struct) -> String {
    spec.fields()
        .iter()
        .zip(partition.iter())
        .map(|(f, v)| format!("{}={}", f.name, value(f.transform, v)))
        .collect::<Vec<_>>()
        .join("/")
}

fn value(transform: Transform, v: Option<&Literal>) -> String {
    match (Grain::of(transform), v) {
        (_, None) => "null".into(),
        (Some(grain), Some(Literal::Primitive(PrimitiveLiteral::Int(u)))) => grain.label(*u),
        (_, Some(Literal::Primitive(p))) => match p {
            PrimitiveLiteral::Int(i) => i.to_string(),
            PrimitiveLiteral::Long(i) => i.to_string(),
            PrimitiveLiteral::String(s) => s.clone(),
            PrimitiveLiteral::Boolean(b) => b.to_string(),
            other => format!("{other:?}"),
        },
        (_, Some(other)) => format!("{other:?}"),
    }
}
