//! TOML -> [`Pipeline`](crate::spec::Pipeline), with positions on every error: one file per
//! section of the spec (`catalog`, `ingest`, `transform`, `expect`, `reader`), the raw TOML
//! shape in `raw`, and the checks that span sections in `file`.

mod catalog;
mod endpoint;
mod engine;
mod expect;
mod fields;
mod file;
mod ingest;
mod maintenance;
mod model_test;
mod position;
mod project;
mod raw;
mod reader;
mod schedule;
mod transform;

pub use file::load_pipeline_file;
pub use model_test::load_model_tests;
pub use position::display_path_in;
pub use project::{list_pipelines, load_pipeline, load_with_catalog, pipeline_names, producer_of};
