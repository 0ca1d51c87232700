//! JSON: tolerant extraction and repair of JSON emitted by models.
