//! Arrow to and from Python through the Arrow C data interface (the PyCapsule protocol):
//! pyarrow takes the buffers Rust built, and Rust reads pyarrow's, without a copy either way.

use std::ffi::CString;

use arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_data::ArrayData;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

/// A record batch handed to Python: `pa.record_batch(it)` imports it (pyarrow calls
/// `__arrow_c_array__`).
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

    #[getter]
    fn num_rows(&self) -> usize {
        self.data.len()
    }
}

/// A pyarrow RecordBatch (any object exporting a struct array), sharing its buffers.
pub fn import_batch(obj: &Bound<'_, PyAny>) -> PyResult<StructArray> {
    let capsules = obj.call_method0("__arrow_c_array__").map_err(|_| {
        PyTypeError::new_err("expected an Arrow record batch (an object with __arrow_c_array__)")
    })?;
    let (schema, array): (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>) = capsules.extract()?;
    let schema_ptr = schema.pointer_checked(Some(c"arrow_schema"))?;
    let array_ptr = array.pointer_checked(Some(c"arrow_array"))?;
    // SAFETY: the capsule names promise these structs (the PyCapsule protocol); from_raw moves
    // the array out and marks the capsule's copy released, so it is released exactly once.
    let data = unsafe {
        let schema = &*(schema_ptr.as_ptr() as *const FFI_ArrowSchema);
        let array = FFI_ArrowArray::from_raw(array_ptr.as_ptr() as *mut FFI_ArrowArray);
        from_ffi(array, schema)
    }
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    match data.data_type() {
        arrow_schema::DataType::Struct(_) => Ok(StructArray::from(data)),
        other => Err(PyTypeError::new_err(format!(
            "expected an Arrow record batch, got an array of {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array};
    use std::sync::Arc;

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
}
