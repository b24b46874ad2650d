//! The file's footer, FileMetaData in thrift's compact protocol: the schema (one leaf per
//! column under the root), each row group's column chunks, the key-value metadata.

use arrow_schema::DataType;

use super::columns::Statistics;
use super::read::CREATED_BY;
use super::thrift::{Compact, Kind};
use super::{physical, ColumnSpec};

// Parquet's enums (parquet.thrift).
const REQUIRED: i32 = 0;
const OPTIONAL: i32 = 1;
const UTF8: i32 = 0;
const INT_16: i32 = 16;

/// Where one column chunk went and how it was written: its ColumnMetaData.
pub struct ChunkMeta {
    pub encodings: Vec<i32>,
    pub codec: i32,
    pub num_values: i64,
    pub uncompressed: i64,
    pub compressed: i64,
    pub data_page_offset: i64,
    pub dictionary_page_offset: Option<i64>,
    pub statistics: Option<Statistics>,
}

pub struct RowGroupMeta {
    pub columns: Vec<ChunkMeta>,
    pub rows: i64,
    pub file_offset: i64,
}

/// FileMetaData of a file of `columns`, `rows` rows in `row_groups`.
pub fn footer(
    columns: &[ColumnSpec],
    rows: i64,
    row_groups: &[RowGroupMeta],
    key_values: &[(String, Vec<u8>)],
) -> Vec<u8> {
    let mut t = Compact::new();
    t.i32(1, 2);
    t.list(2, Kind::Struct, columns.len() + 1);
    t.begin_elem();
    t.binary(4, b"schema");
    t.i32(5, columns.len() as i32);
    t.end();
    for spec in columns {
        schema_element(&mut t, spec);
    }
    t.i64(3, rows);
    t.list(4, Kind::Struct, row_groups.len());
    for (ordinal, group) in row_groups.iter().enumerate() {
        row_group(&mut t, columns, group, ordinal);
    }
    t.list(5, Kind::Struct, key_values.len());
    for (key, value) in key_values {
        t.begin_elem();
        t.binary(1, key.as_bytes());
        t.binary(2, value);
        t.end();
    }
    t.binary(6, format!("{CREATED_BY} version 0.1.0").as_bytes());
    t.list(7, Kind::Struct, columns.len());
    for _ in columns {
        // TypeDefinedOrder: min/max follow the type's own order (signed for integers)
        t.begin_elem();
        t.begin(1);
        t.end();
        t.end();
    }
    t.end();
    t.out
}

fn row_group(t: &mut Compact, columns: &[ColumnSpec], group: &RowGroupMeta, ordinal: usize) {
    t.begin_elem();
    t.list(1, Kind::Struct, group.columns.len());
    for (spec, chunk) in columns.iter().zip(&group.columns) {
        column_chunk(t, spec, chunk);
    }
    t.i64(2, group.columns.iter().map(|c| c.uncompressed).sum());
    t.i64(3, group.rows);
    t.i64(5, group.file_offset);
    t.i64(6, group.columns.iter().map(|c| c.compressed).sum());
    if let Ok(ordinal) = i16::try_from(ordinal) {
        t.field_i16(7, ordinal);
    }
    t.end();
}

fn schema_element(t: &mut Compact, spec: &ColumnSpec) {
    t.begin_elem();
    t.i32(
        1,
        physical(&spec.data_type).expect("checked when the file was made"),
    );
    t.i32(3, if spec.nullable { OPTIONAL } else { REQUIRED });
    t.binary(4, spec.name.as_bytes());
    match spec.data_type {
        DataType::Utf8 | DataType::Dictionary(..) => {
            t.i32(6, UTF8);
            t.begin(10);
            t.begin(1); // StringType
            t.end();
            t.end();
        }
        DataType::Int16 => {
            t.i32(6, INT_16);
            t.begin(10);
            t.begin(10); // IntType
            t.i8(1, 16);
            t.bool(2, true);
            t.end();
            t.end();
        }
        _ => {}
    }
    t.end();
}

fn column_chunk(t: &mut Compact, spec: &ColumnSpec, chunk: &ChunkMeta) {
    t.begin_elem();
    t.i64(
        2,
        chunk
            .dictionary_page_offset
            .unwrap_or(chunk.data_page_offset),
    );
    t.begin(3);
    t.i32(
        1,
        physical(&spec.data_type).expect("checked when the file was made"),
    );
    t.list(2, Kind::I32, chunk.encodings.len());
    for &e in &chunk.encodings {
        t.elem_i32(e);
    }
    t.list(3, Kind::Binary, 1);
    t.elem_binary(spec.name.as_bytes());
    t.i32(4, chunk.codec);
    t.i64(5, chunk.num_values);
    t.i64(6, chunk.uncompressed);
    t.i64(7, chunk.compressed);
    t.i64(9, chunk.data_page_offset);
    if let Some(offset) = chunk.dictionary_page_offset {
        t.i64(11, offset);
    }
    if let Some(s) = &chunk.statistics {
        t.begin(12);
        t.i64(3, s.null_count);
        if let Some((min, max)) = &s.min_max {
            t.binary(5, max);
            t.binary(6, min);
        }
        t.end();
    }
    t.end();
    t.end();
}
