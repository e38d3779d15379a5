//! Which column type changes Iceberg can apply in place (the field id and the data files
//! stay): int -> long, float -> double, decimal(P, S) -> decimal(P', S) with P' > P.

use iceberg::spec::{PrimitiveType, Type};

/// How a column's type changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeChange {
    Same,
    /// A safe widening: old files read as the new type.
    Widen,
    /// Old values cannot be read as the new type.
    Incompatible,
}

/// Classifies the change of a column's type from `old` to `new`.
pub fn type_change(old: &Type, new: &Type) -> TypeChange {
    use PrimitiveType as P;
    if old == new {
        return TypeChange::Same;
    }
    match (old, new) {
        (Type::Primitive(P::Int), Type::Primitive(P::Long))
        | (Type::Primitive(P::Float), Type::Primitive(P::Double)) => TypeChange::Widen,
        (
            Type::Primitive(P::Decimal {
                precision: p1,
                scale: s1,
            }),
            Type::Primitive(P::Decimal {
                precision: p2,
                scale: s2,
            }),
        ) if s1 == s2 && p2 > p1 => TypeChange::Widen,
        _ => TypeChange::Incompatible,
    }
}

/// The widenings Iceberg allows, for messages.
pub const WIDENINGS: &str =
    "int -> long, float -> double, decimal(P,S) -> decimal(P',S) with P' > P";

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: PrimitiveType) -> Type {
        Type::Primitive(t)
    }

    #[test]
    fn widenings() {
        use PrimitiveType as P;
        assert_eq!(type_change(&p(P::Int), &p(P::Long)), TypeChange::Widen);
        assert_eq!(type_change(&p(P::Float), &p(P::Double)), TypeChange::Widen);
        let dec = |precision, scale| p(P::Decimal { precision, scale });
        assert_eq!(type_change(&dec(10, 2), &dec(12, 2)), TypeChange::Widen);
        assert_eq!(
            type_change(&dec(10, 2), &dec(12, 3)),
            TypeChange::Incompatible
        );
        assert_eq!(
            type_change(&dec(12, 2), &dec(10, 2)),
            TypeChange::Incompatible
        );
        assert_eq!(
            type_change(&p(P::Long), &p(P::Int)),
            TypeChange::Incompatible
        );
        assert_eq!(
            type_change(&p(P::String), &p(P::Long)),
            TypeChange::Incompatible
        );
        assert_eq!(type_change(&p(P::Long), &p(P::Long)), TypeChange::Same);
    }
}
