use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let m: iceberg::spec::TableMetadata = serde_json::from_slice(&bytes).unwrap();
        let parse = t.elapsed();
        let t = Instant::now();
        let s = serde_json::to_vec(&m).unwrap();
        let ser = t.elapsed();
        let t = Instant::now();
        let c = m.clone();
        let clone = t.elapsed();
        let t = Instant::now();
        let b = c.into_builder(None).build().unwrap();
        let build = t.elapsed();
        let t = Instant::now();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let value = t.elapsed();
        println!("parse {parse:?} ser {ser:?} ({} bytes) clone {clone:?} build {build:?} value {value:?} {}", s.len(), b.metadata.snapshots().count() + v.as_object().map_or(0, |o| o.len()));
    }
}
