//! Arrow to and from Python through the Arrow C data interface (the PyCapsule protocol):
//! pyarrow takes the buffers Rust built, and Rust reads pyarrow's, without a copy either way.
//! Ingest and the streaming pass both hand their rows over as one `ArrowBatch`.

use std::ffi::CString;

use arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{
    make_array, Array, ArrayRef, Int32Array, PrimitiveArray, RecordBatch, StructArray,
};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Fields, Schema};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

/// An exact sum handed to SQL as two BIGINT columns (hi, lo), which it adds back as
/// `hi::HUGEINT * 4294967296 + lo` (the stage counts', iostat's and the issuers' sums).
pub fn split_sum(total: i128) -> (i64, i64) {
    ((total >> 32) as i64, (total & 0xFFFF_FFFF) as i64)
}

/// Whether every present key of a dictionary array indexes one of its `entries` values (a key
/// outside would panic when read, or be written without a check). Every slot in range, null ones
/// too (as the pass fills them), is one branch-free sweep; else the null slots, which may hold
/// anything, are skipped.
pub fn keys_within(keys: &Int32Array, entries: usize) -> bool {
    let in_range = |k: i32| (k as u32 as usize) < entries;
    keys.values().iter().fold(true, |all, &k| all & in_range(k))
        || keys.iter().flatten().all(in_range)
}

/// Rows handed to Python as one struct array: `pa.record_batch(rows)` imports them (pyarrow
/// calls `__arrow_c_array__`).
#[pyclass(frozen, module = "blkscope._core")]
pub struct ArrowBatch {
    data: ArrayData,
}

impl ArrowBatch {
    pub fn new(batch: RecordBatch) -> ArrowBatch {
        ArrowBatch {
            data: StructArray::from(batch).into_data(),
        }
    }

    /// Columns of equal length by name; every one nullable in the struct's own type, since
    /// the Python side puts them under the declared schema (schemas/), which says what may be
    /// null.
    pub fn from_columns(columns: Vec<(&str, ArrayRef)>) -> ArrowBatch {
        let fields: Fields = columns
            .iter()
            .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
            .collect();
        let arrays = columns.into_iter().map(|(_, a)| a).collect();
        ArrowBatch {
            data: StructArray::new(fields, arrays, None).into_data(),
        }
    }
}

#[pymethods]
impl ArrowBatch {
    /// The Arrow PyCapsule protocol: (schema capsule, array capsule). A requested schema is
    /// not honoured: the columns already have the types the Python side declares.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let (array, schema) =
            to_ffi(&self.data).map_err(|e| PyValueError::new_err(e.to_string()))?;
        // A capsule drops its struct when Python frees it: the release callback runs then,
        // unless pyarrow has moved the struct out (which leaves it released).
        let schema = PyCapsule::new(py, schema, Some(CString::from(c"arrow_schema")))?;
        let array = PyCapsule::new(py, array, Some(CString::from(c"arrow_array")))?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }

    /// How many rows the batch holds.
    #[getter]
    fn num_rows(&self) -> usize {
        self.data.len()
    }
}

/// The array any Python object exports through `__arrow_c_array__`, sharing its buffers.
/// `what` names the expected kind in the error.
fn import_array(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<ArrayData> {
    let capsules = obj.call_method0("__arrow_c_array__").map_err(|_| {
        PyTypeError::new_err(format!(
            "expected an Arrow {what} (an object with __arrow_c_array__)"
        ))
    })?;
    let (schema, array): (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>) = capsules.extract()?;
    let schema_ptr = schema.pointer_checked(Some(c"arrow_schema"))?;
    let array_ptr = array.pointer_checked(Some(c"arrow_array"))?;
    // SAFETY: the capsule names promise these structs (the PyCapsule protocol); from_raw moves
    // the array out and marks the capsule's copy released, so it is released exactly once.
    unsafe {
        let schema = &*(schema_ptr.as_ptr() as *const FFI_ArrowSchema);
        let array = FFI_ArrowArray::from_raw(array_ptr.as_ptr() as *mut FFI_ArrowArray);
        from_ffi(array, schema)
    }
    .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The schema any Python object exports through `__arrow_c_schema__` (a pyarrow Schema), with
/// its field and schema metadata.
pub fn import_schema(obj: &Bound<'_, PyAny>) -> PyResult<Schema> {
    let capsule = obj.call_method0("__arrow_c_schema__").map_err(|_| {
        PyTypeError::new_err("expected an Arrow schema (an object with __arrow_c_schema__)")
    })?;
    let capsule = capsule.cast_into::<PyCapsule>()?;
    let ptr = capsule.pointer_checked(Some(c"arrow_schema"))?;
    // SAFETY: the capsule's name promises an FFI_ArrowSchema (the PyCapsule protocol); it is
    // only read here, and the capsule keeps owning (and releases) it.
    let schema = unsafe { &*(ptr.as_ptr() as *const FFI_ArrowSchema) };
    Schema::try_from(schema).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A pyarrow RecordBatch (any object exporting a struct array), sharing its buffers.
pub fn import_batch(obj: &Bound<'_, PyAny>) -> PyResult<StructArray> {
    let data = import_array(obj, "record batch")?;
    match data.data_type() {
        DataType::Struct(_) => Ok(StructArray::from(data)),
        other => Err(PyTypeError::new_err(format!(
            "expected an Arrow record batch, got an array of {other}"
        ))),
    }
}

/// An array of primitive type T without nulls from any Python object that exports one (a
/// pyarrow Array, or `pa.array(numpy_array)`), sharing its buffers.
pub fn import_primitive<T: ArrowPrimitiveType>(
    obj: &Bound<'_, PyAny>,
) -> PyResult<PrimitiveArray<T>> {
    let array: ArrayRef = make_array(import_array(obj, "array")?);
    if array.data_type() != &T::DATA_TYPE {
        return Err(PyTypeError::new_err(format!(
            "expected an Arrow array of {}, got {}",
            T::DATA_TYPE,
            array.data_type()
        )));
    }
    if array.null_count() != 0 {
        return Err(PyValueError::new_err(
            "expected an Arrow array without nulls",
        ));
    }
    Ok(array
        .as_any()
        .downcast_ref::<PrimitiveArray<T>>()
        .expect("checked the type above")
        .clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn keys_are_checked_where_present_only() {
        assert!(keys_within(&Int32Array::from(vec![0, 2, 1]), 3));
        assert!(!keys_within(&Int32Array::from(vec![0, 3]), 3));
        assert!(!keys_within(&Int32Array::from(vec![-1]), 3));
        // a null slot may hold any key
        let nulls = Int32Array::new(vec![0, 99].into(), Some(vec![true, false].into()));
        assert!(keys_within(&nulls, 1));
        let bad = Int32Array::new(vec![7, 0].into(), Some(vec![true, false].into()));
        assert!(!keys_within(&bad, 1));
    }

    #[test]
    fn a_batch_exported_imports_back() {
        let batch = RecordBatch::try_from_iter([(
            "t",
            Arc::new(Int64Array::from(vec![7, 8, 9])) as ArrayRef,
        )])
        .unwrap();
        let out = ArrowBatch::new(batch);
        let (array, schema) = to_ffi(&out.data).unwrap();
        let back = StructArray::from(unsafe { from_ffi(array, &schema) }.unwrap());
        let t = back.column_by_name("t").unwrap();
        let t = t.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(t.values().to_vec(), vec![7, 8, 9]);
    }

    #[test]
    fn columns_keep_their_names_and_rows() {
        let rows = ArrowBatch::from_columns(vec![
            ("a", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
            ("b", Arc::new(StringArray::from(vec!["x", "y"])) as ArrayRef),
        ]);
        assert_eq!(rows.data.len(), 2);
        let rows = StructArray::from(rows.data.clone());
        assert_eq!(rows.column_names(), vec!["a", "b"]);
    }

    #[test]
    fn a_sum_splits_into_what_the_sql_adds_back() {
        for total in [
            0i128,
            1,
            -1,
            1 << 40,
            -(1 << 70) + 12_345,
            i128::from(i64::MAX) * 3,
        ] {
            let (hi, lo) = split_sum(total);
            assert_eq!(i128::from(hi) * 4_294_967_296 + i128::from(lo), total);
        }
    }
}
