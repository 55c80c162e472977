//! `shared.kernel._kernel`: the normalizer's fast lane, in Rust.
//!
//! A lane turns one vendor message into the unified topic's records (key,
//! single-object Avro value, table, op, event time), byte for byte what the
//! Python parser + `shared.codec.avro` + `shared.kafka.records.event_key`
//! produce, or declines (`None`) so that the Python parser handles the
//! message. The column types stay Python's: on a type map it has not seen,
//! a lane calls its planner (`shared/kernel/plan.py`), which reads the types
//! with `shared.parsing.sqltypes` and answers with a conversion kind per
//! column and the encoded column descriptors. A panic is caught and raises `LaneFailed`: the
//! caller (`shared.normalize.NativeCodec`) counts it and gives the message to the parser.

mod avro;
mod avro_decode;
mod avro_reader;
mod canal;
mod ckafka;
mod conversion;
mod debezium;
mod debezium_smt;
mod decline;
mod detect;
mod drs;
mod drs_json;
mod encode;
mod event;
mod inferred;
mod json;
mod json_view;
mod kafkariver;
mod maxwell;
mod ogg;
mod sqltype;
mod oms_avro;
mod oms_dataworks;
mod oms_json;
mod oms_shareplex;
mod typed;
mod values;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::intern;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use canal::{Outcome, Plan};
use event::{Coordinates, Profile};
use values::Kind;

const PLAN_LIMIT: usize = 4096;

create_exception!(
    _kernel,
    LaneFailed,
    PyException,
    "A lane panicked on a message (a bug in the lane): the Python parser reads it instead."
);

/// The error a caught panic becomes: the message goes to the Python parser, and is counted as failed.
fn failed() -> PyErr {
    LaneFailed::new_err("the fast lane panicked on this message")
}

/// A lane's caches. Lanes are used by one thread (the normalizer's event loop), but Python may
/// drop one on any thread (its garbage collector runs wherever it is triggered), so a lane must
/// be `Send + Sync`: a `Mutex` that is never contended, with `RefCell`'s method names.
struct Guarded<T>(std::sync::Mutex<T>);

impl<T> Guarded<T> {
    fn new(value: T) -> Self {
        Guarded(std::sync::Mutex::new(value))
    }

    fn borrow(&self) -> std::sync::MutexGuard<'_, T> {
        // A panic while locked (caught and declined) leaves the cache whole: keep using it.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn borrow_mut(&self) -> std::sync::MutexGuard<'_, T> {
        self.borrow()
    }
}
/// Schemas the Debezium lane compares byte for byte before reading one (as `envelope.py`'s recent list).
const RECENT: usize = 8;


/// The Canal flat JSON lane (the Canal profile of `canal-json`).
#[pyclass]
struct CanalLane {
    profile: Profile,
    planner: Py<PyAny>,
    /// instant(text) -> micros since the epoch | None: TIMESTAMP texts in the source zone (not UTC).
    instant: Py<PyAny>,
    plans: Guarded<HashMap<Vec<u8>, Option<Arc<Plan>>>>,
    /// The type map seen last and its plan: consecutive messages of a table share one, and
    /// comparing its bytes costs less than hashing them.
    last: Guarded<Option<(Vec<u8>, Option<Arc<Plan>>)>>,
    /// Table names as Python strings, made once.
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

#[pymethods]
impl CanalLane {
    #[new]
    fn new(
        fingerprint: &[u8],
        format_id: String,
        db_type: String,
        planner: Py<PyAny>,
        instant: Py<PyAny>,
    ) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        Ok(CanalLane {
            profile: Profile { fingerprint, format_id, db_type },
            planner,
            instant,
            plans: Guarded::new(HashMap::new()),
            last: Guarded::new(None),
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value, ...]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        let found = with_planning(
            || {
                let plans = self.plans.borrow();
                let lookup = |raw_map: &[u8]| {
                    if let Some((bytes, plan)) = self.last.borrow().as_ref() {
                        if bytes.as_slice() == raw_map {
                            return Some(plan.clone());
                        }
                    }
                    let found = plans.get(raw_map).cloned();
                    if let Some(plan) = &found {
                        *self.last.borrow_mut() = Some((raw_map.to_vec(), plan.clone()));
                    }
                    found
                };
                let zoned = zone_reader(py, &self.instant);
                match canal::parse(raw, &self.profile, &at, &lookup, &zoned) {
                    Outcome::Records(records) => Attempt::Done(records),
                    Outcome::NeedPlan(map) => Attempt::NeedPlan((map.raw.to_vec(), map.columns)),
                    Outcome::Decline => Attempt::Decline,
                }
            },
            |(raw_map, columns)| {
                let plan = self.ask_planner(py, columns)?;
                *self.last.borrow_mut() = None;
                remember(&self.plans, raw_map, plan);
                Ok(())
            },
        )?;
        let Some(records) = found else { return Ok(None) };
        let first = &records[0];
        let rows = records.iter().map(|r| (r.key.as_slice(), r.value.as_slice()));
        taken(py, &self.tables, &first.table, first.op, first.ts_ms, rows).map(Some)
    }

    /// How many type maps this lane has planned (for tests and metrics).
    fn planned(&self) -> usize {
        self.plans.borrow().len()
    }
}

impl CanalLane {
    fn ask_planner(&self, py: Python<'_>, columns: Vec<(String, Option<String>)>) -> PyResult<Option<Arc<Plan>>> {
        ask_flat_planner(py, &self.planner, columns, Kind::from_code)
    }
}

/// The Maxwell JSON lane (`maxwell-json`): one row per message, every column inferred from its
/// JSON value, so it needs no planner.
#[pyclass]
struct MaxwellLane {
    profile: Profile,
    /// Option `order=position`: keys by binlog position (a message without one declines); else the
    /// input's Kafka order for every message.
    by_position: bool,
    /// Table names as Python strings, made once.
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

#[pymethods]
impl MaxwellLane {
    #[new]
    fn new(fingerprint: &[u8], format_id: String, db_type: String, by_position: bool) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        Ok(MaxwellLane {
            profile: Profile { fingerprint, format_id, db_type },
            by_position,
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        // A panic raises LaneFailed (the parser takes the message), never crashes the service.
        let parsed = catch_unwind(AssertUnwindSafe(|| maxwell::parse(raw, &self.profile, self.by_position, &at)));
        let Some(record) = parsed.map_err(|_| failed())? else {
            return Ok(None);
        };
        let row = [(record.key.as_slice(), record.value.as_slice())];
        taken(py, &self.tables, &record.table, record.op, Some(record.ts_ms), row.into_iter()).map(Some)
    }

    /// Always 0: column types come from the values, there is nothing to plan.
    fn planned(&self) -> usize {
        0
    }
}

/// What the DRS lanes share: the flat profile, the planner (MySQL types, DRS's byte lists,
/// `services/drs_avro/plan.py`), the zone reader, and their caches.
struct DrsCore {
    profile: Profile,
    planner: Py<PyAny>,
    /// instant(text) -> micros since the epoch | None: wall-clock TIMESTAMP texts in the source zone.
    instant: Py<PyAny>,
    plans: Guarded<HashMap<Vec<u8>, Option<Arc<drs::Plan>>>>,
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

impl DrsCore {
    fn new(
        fingerprint: &[u8],
        format_id: String,
        db_type: String,
        planner: Py<PyAny>,
        instant: Py<PyAny>,
    ) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        Ok(DrsCore {
            profile: Profile { fingerprint, format_id, db_type },
            planner,
            instant,
            plans: Guarded::new(HashMap::new()),
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value, ...]) of the message `read` reads with the lane's
    /// plans and zone, or None: the Python parser takes it.
    fn parse<'py, 'a>(
        &self,
        py: Python<'py>,
        read: impl Fn(&drs::PlanFor, values::ZoneReader) -> drs::Outcome<'a>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let found = with_planning(
            || {
                let plans = self.plans.borrow();
                let lookup = |raw_map: &[u8]| plans.get(raw_map).cloned();
                let zoned = zone_reader(py, &self.instant);
                match read(&lookup, &zoned) {
                    drs::Outcome::Records(records) => Attempt::Done(records),
                    drs::Outcome::NeedPlan(raw_map, columns) => Attempt::NeedPlan((raw_map.to_vec(), columns)),
                    drs::Outcome::Decline => Attempt::Decline,
                }
            },
            |(raw_map, columns)| {
                let plan = self.ask_planner(py, columns)?;
                remember(&self.plans, raw_map, plan);
                Ok(())
            },
        )?;
        let Some(records) = found else { return Ok(None) };
        let first = &records[0];
        let rows = records.iter().map(|r| (r.key.as_slice(), r.value.as_slice()));
        taken(py, &self.tables, &first.table, first.op, first.ts_ms, rows).map(Some)
    }

    fn ask_planner(&self, py: Python<'_>, columns: Vec<(String, Option<String>)>) -> PyResult<Option<Arc<drs::Plan>>> {
        ask_flat_planner(py, &self.planner, columns, drs::Col::from_code)
    }

    fn planned(&self) -> usize {
        self.plans.borrow().len()
    }
}

/// The DRS Avro lane (`drs-avro`, flat records): the user's record schema compiled once, column
/// types from the planner (`services/drs_json/plan.py`), as in the Canal lane.
#[pyclass]
struct DrsAvroLane {
    schema: drs::Schema,
    core: DrsCore,
}

#[pymethods]
impl DrsAvroLane {
    /// fields: (name, type notation of `avro_reader::Ty`) in the schema's order.
    #[new]
    fn new(
        fingerprint: &[u8],
        format_id: String,
        db_type: String,
        fields: Vec<(String, String)>,
        planner: Py<PyAny>,
        instant: Py<PyAny>,
    ) -> PyResult<Self> {
        let mut compiled = Vec::with_capacity(fields.len());
        for (name, notation) in &fields {
            let field = drs::Field::of(name).ok_or_else(|| PyValueError::new_err(format!("field {name:?}")))?;
            let ty = avro_reader::Ty::compile(notation)
                .ok_or_else(|| PyValueError::new_err(format!("type notation {notation:?}")))?;
            compiled.push((field, ty));
        }
        let core = DrsCore::new(fingerprint, format_id, db_type, planner, instant)?;
        Ok(DrsAvroLane { schema: drs::Schema { fields: compiled }, core })
    }

    /// (table, op, event time, [key, value, ...]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        self.core.parse(py, |lookup, zoned| drs::parse(raw, &self.schema, &self.core.profile, &at, lookup, zoned))
    }

    /// How many type maps this lane has planned (for tests and metrics).
    fn planned(&self) -> usize {
        self.core.planned()
    }
}

/// The Debezium family's row schemas: each distinct schema (its bytes) planned once by the
/// lane's planner, the recent ones compared byte for byte first (`debezium::envelope`).
struct SchemaPlans {
    /// planner(schema bytes) -> (names, kinds, scales, columns_avro) | None
    planner: Py<PyAny>,
    plans: Guarded<HashMap<Vec<u8>, Option<Arc<debezium::Plan>>>>,
    /// Schemas seen recently and their plans, newest first: messages of a table repeat the same
    /// schema bytes (most of the message), and comparing them costs less than reading or hashing.
    recent: Guarded<Vec<debezium::Known>>,
}

impl SchemaPlans {
    fn new(planner: Py<PyAny>) -> Self {
        SchemaPlans { planner, plans: Guarded::new(HashMap::new()), recent: Guarded::new(Vec::new()) }
    }

    /// What `parse` (a lane's reading, given the recent schemas and the plan lookup) makes of one
    /// message, planning its schema first when it asks for that.
    fn read<'a>(
        &self,
        py: Python<'_>,
        parse: impl Fn(&debezium::Recent, &debezium::PlanFor) -> debezium::Outcome<'a>,
    ) -> PyResult<Option<event::Record>> {
        with_planning(
            || {
                let plans = self.plans.borrow();
                // A copy of the (few, reference-counted) entries: `lookup` may add one meanwhile.
                let known = self.recent.borrow().clone();
                let lookup = |schema: &[u8]| {
                    let found = plans.get(schema).cloned();
                    if let Some(Some(plan)) = &found {
                        let mut recent = self.recent.borrow_mut();
                        recent.truncate(RECENT - 1);
                        recent.insert(0, (Arc::from(schema), plan.clone()));
                    }
                    found
                };
                match parse(&known, &lookup) {
                    debezium::Outcome::Record(record) => Attempt::Done(record),
                    debezium::Outcome::NeedPlan(schema) => Attempt::NeedPlan(schema.to_vec()),
                    debezium::Outcome::Decline => Attempt::Decline,
                }
            },
            |schema| {
                let plan = self.ask_planner(py, &schema)?;
                remember(&self.plans, schema, plan);
                Ok(())
            },
        )
    }

    fn ask_planner(&self, py: Python<'_>, schema: &[u8]) -> PyResult<Option<Arc<debezium::Plan>>> {
        let answer = self.planner.call1(py, (PyBytes::new(py, schema),))?;
        if answer.is_none(py) {
            return Ok(None);
        }
        let (names, kinds, scales, columns_avro): (Vec<String>, Vec<i64>, Vec<i64>, Vec<u8>) = answer.extract(py)?;
        if names.len() != kinds.len() || kinds.len() != scales.len() {
            return Err(PyValueError::new_err("planner: one kind and one scale per declared column"));
        }
        let kinds = kinds.into_iter().zip(scales).map(|(k, s)| debezium::Kind::from_code(k, s)).collect();
        Ok(Some(Arc::new(debezium::Plan { names, kinds, columns_avro })))
    }

    fn len(&self) -> usize {
        self.plans.borrow().len()
    }
}

/// The Debezium JSON lane (`debezium-json`, JsonConverter messages with schemas): its planner
/// reads each row schema with the Python parser's own Connect type mapping.
#[pyclass]
struct DebeziumLane {
    profile: Profile,
    /// Option `primary_key`'s column names (`primary_key_option`), maybe none.
    primary_key: Vec<String>,
    schemas: SchemaPlans,
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

#[pymethods]
impl DebeziumLane {
    #[new]
    fn new(fingerprint: &[u8], format_id: String, primary_key: Vec<String>, planner: Py<PyAny>) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        Ok(DebeziumLane {
            // db_type is per message here (the connector's name), so the profile's is unused.
            profile: Profile { fingerprint, format_id, db_type: String::new() },
            primary_key,
            schemas: SchemaPlans::new(planner),
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        let found = self
            .schemas
            .read(py, |known, lookup| debezium::parse(raw, &self.profile, &self.primary_key, &at, known, lookup))?;
        let Some(record) = found else { return Ok(None) };
        let row = [(record.key.as_slice(), record.value.as_slice())];
        taken(py, &self.tables, &record.table, record.op, record.ts_ms, row.into_iter()).map(Some)
    }

    /// How many schemas this lane has planned (for tests and metrics).
    fn planned(&self) -> usize {
        self.schemas.len()
    }
}

/// The KafkaRiverCanal lane (`kafkariver-canal`): one row per message, its columns typed by
/// their `t` texts, which the Canal lane's planner (`plan.planner`, MySQL rules) reads.
#[pyclass]
struct KafkaRiverLane {
    profile: Profile,
    planner: Py<PyAny>,
    /// instant(text) -> micros since the epoch | None: TIMESTAMP texts in the source zone (not UTC).
    instant: Py<PyAny>,
    /// Plans by the columns' (name, type) pairs (`kafkariver::type_key`).
    plans: Guarded<HashMap<Vec<u8>, Option<Arc<kafkariver::Plan>>>>,
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

#[pymethods]
impl KafkaRiverLane {
    #[new]
    fn new(
        fingerprint: &[u8],
        format_id: String,
        db_type: String,
        planner: Py<PyAny>,
        instant: Py<PyAny>,
    ) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        Ok(KafkaRiverLane {
            profile: Profile { fingerprint, format_id, db_type },
            planner,
            instant,
            plans: Guarded::new(HashMap::new()),
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        let found = with_planning(
            || {
                let plans = self.plans.borrow();
                let lookup = |key: &[u8]| plans.get(key).cloned();
                let zoned = zone_reader(py, &self.instant);
                match kafkariver::parse(raw, &self.profile, &at, &lookup, &zoned) {
                    kafkariver::Outcome::Record(record) => Attempt::Done(record),
                    kafkariver::Outcome::NeedPlan(key, columns) => Attempt::NeedPlan((key, columns)),
                    kafkariver::Outcome::Decline => Attempt::Decline,
                }
            },
            |(key, columns)| {
                let plan = ask_flat_planner(py, &self.planner, columns, Kind::from_code)?;
                remember(&self.plans, key, plan);
                Ok(())
            },
        )?;
        let Some(record) = found else { return Ok(None) };
        let row = [(record.key.as_slice(), record.value.as_slice())];
        taken(py, &self.tables, &record.table, record.op, record.ts_ms, row.into_iter()).map(Some)
    }

    /// How many column-type lists this lane has planned (for tests and metrics).
    fn planned(&self) -> usize {
        self.plans.borrow().len()
    }
}

/// The CKafka format-one lane (`ckafka-v1`, DML messages): every column inferred from its
/// value, so no planner; `TIME` read in the source zone.
#[pyclass]
struct CKafkaLane {
    profile: Profile,
    /// time(text) -> epoch ms | None: a `TIME` text in the source zone; None in UTC (read here).
    time: Option<Py<PyAny>>,
    /// The `TIME` read last and its reading: consecutive messages mostly share their second.
    last_time: Guarded<Option<(String, Option<i64>)>>,
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

#[pymethods]
impl CKafkaLane {
    #[new]
    #[pyo3(signature = (fingerprint, format_id, db_type, time))]
    fn new(fingerprint: &[u8], format_id: String, db_type: String, time: Option<Py<PyAny>>) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        Ok(CKafkaLane {
            profile: Profile { fingerprint, format_id, db_type },
            time,
            last_time: Guarded::new(None),
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        let read = |text: &str| -> Option<i64> {
            let mut last = self.last_time.borrow_mut();
            if let Some((seen, ms)) = last.as_ref() {
                if seen == text {
                    return *ms;
                }
            }
            let time = self.time.as_ref()?;
            let ms = read_text(py, time, text);
            *last = Some((text.to_string(), ms));
            ms
        };
        let zoned: ckafka::TimeReader = if self.time.is_some() { Some(&read) } else { None };
        // A panic raises LaneFailed (the parser takes the message), never crashes the service.
        let Some(record) =
            catch_unwind(AssertUnwindSafe(|| ckafka::parse(raw, &self.profile, &at, zoned))).map_err(|_| failed())?
        else {
            return Ok(None);
        };
        let row = [(record.key.as_slice(), record.value.as_slice())];
        taken(py, &self.tables, &record.table, record.op, record.ts_ms, row.into_iter()).map(Some)
    }

    /// Always 0: column types come from the values, there is nothing to plan.
    fn planned(&self) -> usize {
        0
    }
}

/// A lane's TIMESTAMP reader for the source zone: the planner's `instant_reader` called from Rust.
fn zone_reader<'a>(py: Python<'a>, instant: &'a Py<PyAny>) -> impl Fn(&str) -> Option<i64> + 'a {
    move |text: &str| read_text(py, instant, text)
}

/// `reader(text)` of a lane's Python time reader (an `instant_reader`, a wall clock) -> epoch
/// micros or ms | None. A Python error (none expected) declines like any other doubt.
fn read_text(py: Python<'_>, reader: &Py<PyAny>, text: &str) -> Option<i64> {
    reader.call1(py, (text,)).ok()?.extract::<Option<i64>>(py).ok()?
}

// ------------------------------------------------------------------ OceanBase OMS JSON

/// Which OceanBase OMS serialization a lane reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OmsFormat {
    Default,
    Extend,
    DataWorks,
    SharePlex,
}

/// OceanBase OMS JSON: "Default" and "DefaultExtendColumnType" (`oms-default`,
/// `oms-extend-column-type`: untyped columns inferred from their values, `__light_type` types)
/// "DataWorks 2.0" (`oms-dataworks`: `schema.column` types) and "SharePlex" (`oms-shareplex`:
/// untyped). Declared types are read by the planner (`services/oms_default/plan.py`, `services/oms_dataworks/plan.py`) once per list
/// of (column, type word).
#[pyclass]
struct OmsLane {
    profile: Profile,
    format: OmsFormat,
    planner: Py<PyAny>,
    /// instant(text) -> micros since the epoch | None: wall-clock TIMESTAMP texts in the source zone;
    /// for SharePlex, ms(text) -> epoch ms | None of its meta times, or None in UTC (read here).
    instant: Option<Py<PyAny>>,
    plans: Guarded<HashMap<Vec<u8>, Option<Arc<oms_json::Plan>>>>,
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

#[pymethods]
impl OmsLane {
    #[new]
    #[pyo3(signature = (fingerprint, format_id, planner, instant))]
    fn new(
        fingerprint: &[u8],
        format_id: String,
        planner: Py<PyAny>,
        instant: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        let format = match format_id.as_str() {
            "oms-default" => OmsFormat::Default,
            "oms-extend-column-type" => OmsFormat::Extend,
            "oms-dataworks" => OmsFormat::DataWorks,
            "oms-shareplex" => OmsFormat::SharePlex,
            _ => return Err(PyValueError::new_err(format!("no OMS lane for {format_id:?}"))),
        };
        Ok(OmsLane {
            // db_type is per message (dbType), so the profile's is unused.
            profile: Profile { fingerprint, format_id, db_type: String::new() },
            format,
            planner,
            instant,
            plans: Guarded::new(HashMap::new()),
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        let found = with_planning(
            || {
                let plans = self.plans.borrow();
                let lookup = |key: &[u8]| plans.get(key).cloned();
                let zoned = |text: &str| read_text(py, self.instant.as_ref()?, text);
                let profile = &self.profile;
                let outcome = match self.format {
                    OmsFormat::Default => oms_json::parse_default(raw, profile, false, &at, &lookup, &zoned),
                    OmsFormat::Extend => oms_json::parse_default(raw, profile, true, &at, &lookup, &zoned),
                    OmsFormat::DataWorks => oms_dataworks::parse(raw, profile, &at, &lookup, &zoned),
                    OmsFormat::SharePlex => {
                        let wall_clock: Option<values::ZoneReader> = self.instant.as_ref().map(|_| &zoned as _);
                        oms_shareplex::parse(raw, profile, &at, wall_clock)
                    }
                };
                match outcome {
                    oms_json::Outcome::Record(record) => Attempt::Done(record),
                    oms_json::Outcome::NeedPlan(key, columns) => Attempt::NeedPlan((key, columns)),
                    oms_json::Outcome::Decline => Attempt::Decline,
                }
            },
            |(key, columns)| {
                let plan = ask_flat_planner(py, &self.planner, columns, oms_json::Col::from_code)?;
                remember(&self.plans, key, plan);
                Ok(())
            },
        )?;
        let Some(record) = found else { return Ok(None) };
        let row = [(record.key.as_slice(), record.value.as_slice())];
        taken(py, &self.tables, &record.table, record.op, record.ts_ms, row.into_iter()).map(Some)
    }

    /// How many type lists this lane has planned (for tests and metrics).
    fn planned(&self) -> usize {
        self.plans.borrow().len()
    }
}

/// The OceanBase OMS Avro lane (`oms-avro`, the DTS `Record`): column types from the MySQL type
/// codes (`TYPE_CODES`, handed over once), so it needs no planner.
#[pyclass]
struct OmsAvroLane {
    codes: oms_avro::Codes,
    profile: Profile,
    /// instant(text) -> micros since the epoch | None, for a TIMESTAMP's wall clock (a `DateTime`
    /// item) in the source zone; None in UTC, where the wall clock is the instant.
    instant: Option<Py<PyAny>>,
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

#[pymethods]
impl OmsAvroLane {
    /// codes: (type code, logical type, family) for every code of `TYPE_CODES`.
    #[new]
    fn new(
        fingerprint: &[u8],
        format_id: String,
        codes: Vec<(i64, String, String)>,
        instant: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        let codes = oms_avro::Codes::new(codes)
            .ok_or_else(|| PyValueError::new_err("type codes: each below 256, of a known family"))?;
        Ok(OmsAvroLane {
            codes,
            // db_type is per message here (the record's source), so the profile's is unused.
            profile: Profile { fingerprint, format_id, db_type: String::new() },
            instant,
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        // A Python error (a date-time beyond year 9999 in UTC) declines like any other doubt.
        let zoned = |text: &str| read_text(py, self.instant.as_ref()?, text);
        let zoned: Option<values::ZoneReader> = self.instant.as_ref().map(|_| &zoned as values::ZoneReader);
        // A panic raises LaneFailed (the parser takes the message), never crashes the service.
        let parsed = catch_unwind(AssertUnwindSafe(|| oms_avro::parse(raw, &self.codes, &self.profile, &at, zoned)));
        let Some(record) = parsed.map_err(|_| failed())? else { return Ok(None) };
        let row = [(record.key.as_slice(), record.value.as_slice())];
        taken(py, &self.tables, &record.table, record.op, record.ts_ms, row.into_iter()).map(Some)
    }

    /// Always 0: column types come from the type codes, there is nothing to plan.
    fn planned(&self) -> usize {
        0
    }
}

/// The Canal, KafkaRiverCanal, DRS and OMS planners' answer for a type map (column names and their
/// type texts): planner(names, texts) -> (names, kinds, columns_avro) | None (declined), as a plan
/// of the lane's kinds (`from_code`).
fn ask_flat_planner<K>(
    py: Python<'_>,
    planner: &Py<PyAny>,
    columns: Vec<(String, Option<String>)>,
    from_code: impl Fn(i64) -> K,
) -> PyResult<Option<Arc<values::Plan<K>>>> {
    let (names, texts): (Vec<String>, Vec<Option<String>>) = columns.into_iter().unzip();
    let answer = planner.call1(py, (names, texts))?;
    if answer.is_none(py) {
        return Ok(None);
    }
    let (names, kinds, columns_avro): (Vec<String>, Vec<i64>, Vec<u8>) = answer.extract(py)?;
    if names.len() != kinds.len() {
        return Err(PyValueError::new_err("planner: one kind per declared column"));
    }
    let kinds = kinds.into_iter().map(from_code).collect();
    Ok(Some(Arc::new(values::Plan { names, kinds, columns_avro })))
}

/// What one attempt of a planning lane makes of a message.
enum Attempt<R, N> {
    Done(R),
    /// The message needs a plan the lane has not asked its planner for yet.
    NeedPlan(N),
    Decline,
}

/// A planning lane's message: an attempt, and after planning what it asked for, one more. A doubt
/// declines; a panic (caught: it never crashes the service) raises `LaneFailed`; a planner's error is raised.
fn with_planning<R, N>(
    mut attempt: impl FnMut() -> Attempt<R, N>,
    mut plan: impl FnMut(N) -> PyResult<()>,
) -> PyResult<Option<R>> {
    for _ in 0..2 {
        match catch_unwind(AssertUnwindSafe(&mut attempt)) {
            Err(_) => return Err(failed()),
            Ok(Attempt::Decline) => return Ok(None),
            Ok(Attempt::NeedPlan(need)) => plan(need)?,
            Ok(Attempt::Done(found)) => return Ok(Some(found)),
        }
    }
    Ok(None)
}

/// What a lane's `parse` gives Python for one message: (table, op, event time, [key, value, ...]);
/// every row of a message shares the first three.
fn taken<'py, 'r>(
    py: Python<'py>,
    tables: &Guarded<HashMap<String, Py<PyString>>>,
    table: &str,
    op: &str,
    ts_ms: Option<i64>,
    rows: impl Iterator<Item = (&'r [u8], &'r [u8])>,
) -> PyResult<Bound<'py, PyTuple>> {
    let table = python_name(py, tables, table);
    let op = op_name(py, op);
    let ts_ms = ts_ms.into_pyobject(py)?.into_any();
    let mut items = Vec::new();
    for (key, value) in rows {
        items.push(PyBytes::new(py, key));
        items.push(PyBytes::new(py, value));
    }
    let list = PyList::new(py, items)?;
    PyTuple::new(py, [table.into_bound(py).into_any(), op.clone().into_any(), ts_ms, list.into_any()])
}

/// The unified topic's schema fingerprint, as every lane's constructor takes it.
fn fingerprint_of(bytes: &[u8]) -> PyResult<[u8; 8]> {
    bytes.try_into().map_err(|_| PyValueError::new_err("the schema fingerprint must be 8 bytes"))
}

/// Keep a planner's answer (a plan, or None: declined) for its key; all forgotten when full.
fn remember<P>(plans: &Guarded<HashMap<Vec<u8>, Option<P>>>, key: Vec<u8>, plan: Option<P>) {
    let mut plans = plans.borrow_mut();
    if plans.len() >= PLAN_LIMIT {
        plans.clear();
    }
    plans.insert(key, plan);
}

/// A table name as a Python string, made once per name.
fn python_name(py: Python<'_>, cache: &Guarded<HashMap<String, Py<PyString>>>, name: &str) -> Py<PyString> {
    let mut names = cache.borrow_mut();
    if let Some(found) = names.get(name) {
        return found.clone_ref(py);
    }
    if names.len() >= PLAN_LIMIT {
        names.clear();
    }
    let made = PyString::new(py, name).unbind();
    names.insert(name.to_string(), made.clone_ref(py));
    made
}

fn op_name<'py>(py: Python<'py>, op: &str) -> &'py Bound<'py, PyString> {
    match op {
        "INSERT" => intern!(py, "INSERT"),
        "UPDATE" => intern!(py, "UPDATE"),
        "DELETE" => intern!(py, "DELETE"),
        "UPSERT" => intern!(py, "UPSERT"),
        _ => intern!(py, "SNAPSHOT"),
    }
}

/// The Debezium ExtractNewRecordState lane (`debezium-smt`, flattened rows with their Connect
/// schema): the Debezium lane's schema plans and event writing, the SMT's metadata and table.
#[pyclass]
struct DebeziumSmtLane {
    profile: Profile,
    options: debezium_smt::Options,
    /// Each topic's configured `db.table` (`topic_tables`), for rows without `__table`.
    topic_tables: HashMap<String, String>,
    /// The parse context's `source_table`, for topics not in `topic_tables`.
    source_table: Option<String>,
    schemas: SchemaPlans,
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

#[pymethods]
impl DebeziumSmtLane {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        fingerprint: &[u8],
        format_id: String,
        primary_key: Vec<String>,
        db_type: Option<String>,
        topic_tables: HashMap<String, String>,
        source_table: Option<String>,
        planner: Py<PyAny>,
    ) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        Ok(DebeziumSmtLane {
            // db_type is per message here (`__source_connector`, else the option).
            profile: Profile { fingerprint, format_id, db_type: String::new() },
            options: debezium_smt::Options { primary_key, db_type },
            topic_tables,
            source_table,
            schemas: SchemaPlans::new(planner),
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        let source_table = self.topic_tables.get(topic).or(self.source_table.as_ref()).map(String::as_str);
        let found = self.schemas.read(py, |known, lookup| {
            debezium_smt::parse(raw, &self.profile, &self.options, source_table, &at, known, lookup)
        })?;
        let Some(record) = found else { return Ok(None) };
        let row = [(record.key.as_slice(), record.value.as_slice())];
        taken(py, &self.tables, &record.table, record.op, record.ts_ms, row.into_iter()).map(Some)
    }

    /// How many schemas this lane has planned (for tests and metrics).
    fn planned(&self) -> usize {
        self.schemas.len()
    }
}

/// The Oracle GoldenGate JSON lane (`ogg-json`, operation-modeled): untyped values inferred
/// as the Maxwell lane infers them; `current_ts` in a zone other than UTC read by Python.
#[pyclass]
struct OggLane {
    profile: Profile,
    options: ogg::Options,
    /// wall_clock(text) -> epoch ms | None: `current_ts` in the source zone; None in UTC.
    wall_clock: Option<Py<PyAny>>,
    tables: Guarded<HashMap<String, Py<PyString>>>,
}

#[pymethods]
impl OggLane {
    #[new]
    fn new(
        fingerprint: &[u8],
        format_id: String,
        db_type: String,
        database_is_schema: bool,
        wall_clock: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let fingerprint = fingerprint_of(fingerprint)?;
        Ok(OggLane {
            // The event's db_type is the option's (ogg::Options), so the profile's is unused.
            profile: Profile { fingerprint, format_id, db_type: String::new() },
            options: ogg::Options { db_type, database_is_schema },
            wall_clock,
            tables: Guarded::new(HashMap::new()),
        })
    }

    /// (table, op, event time, [key, value]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        let read = |text: &str| read_text(py, self.wall_clock.as_ref()?, text);
        let wall_clock: ogg::WallClock = if self.wall_clock.is_some() { Some(&read) } else { None };
        // A panic raises LaneFailed (the parser takes the message), never crashes the service.
        let Some(record) =
            catch_unwind(AssertUnwindSafe(|| ogg::parse(raw, &self.profile, &self.options, &at, wall_clock)))
                .map_err(|_| failed())?
        else {
            return Ok(None);
        };
        let row = [(record.key.as_slice(), record.value.as_slice())];
        taken(py, &self.tables, &record.table, record.op, record.ts_ms, row.into_iter()).map(Some)
    }

    /// Always 0: column types come from the values, there is nothing to plan.
    fn planned(&self) -> usize {
        0
    }
}

/// The DRS JSON lane (`drs-json`, `drs-json-c`): Canal flat messages with DRS's conventions,
/// read as the DRS Avro lane reads its records (`drs_json.rs`); a DELETE's row is in `old`
/// (`drs-json`) or `data` (`drs-json-c`).
#[pyclass]
struct DrsJsonLane {
    delete_row_in: drs_json::DeleteRowIn,
    core: DrsCore,
}

#[pymethods]
impl DrsJsonLane {
    /// delete_row_in: "old" or "data".
    #[new]
    fn new(
        fingerprint: &[u8],
        format_id: String,
        db_type: String,
        delete_row_in: &str,
        planner: Py<PyAny>,
        instant: Py<PyAny>,
    ) -> PyResult<Self> {
        let delete_row_in = match delete_row_in {
            "old" => drs_json::DeleteRowIn::Old,
            "data" => drs_json::DeleteRowIn::Data,
            other => return Err(PyValueError::new_err(format!("delete_row_in {other:?}: \"old\" or \"data\""))),
        };
        Ok(DrsJsonLane { delete_row_in, core: DrsCore::new(fingerprint, format_id, db_type, planner, instant)? })
    }

    /// (table, op, event time, [key, value, ...]) of one message, or None: the Python parser takes it.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        topic: &str,
        partition: i64,
        offset: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        decline::at(decline::Stage::Read);
        let at = Coordinates { topic, partition, offset };
        let profile = &self.core.profile;
        self.core.parse(py, |lookup, zoned| drs_json::parse(raw, self.delete_row_in, profile, &at, lookup, zoned))
    }

    /// How many type maps this lane has planned (for tests and metrics).
    fn planned(&self) -> usize {
        self.core.planned()
    }
}

/// The JSON view (`shared.codec.json_view`) of a unified-topic record value whose schema has
/// fingerprint `fingerprint`; a ValueError for bytes that are not such a record.
#[pyfunction]
fn render_json<'py>(py: Python<'py>, value: &[u8], fingerprint: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    match json_view::render(value, fingerprint) {
        Some(text) => Ok(PyBytes::new(py, &text)),
        None => Err(PyValueError::new_err("not a canonical change event record of this schema")),
    }
}

/// Where the last lane on this thread stopped (`decline.rs`): read right after its `parse`
/// returned None, the reason it declined that message.
#[pyfunction]
fn last_decline() -> &'static str {
    decline::last().name()
}

/// `auto`'s format for a JSON message (`services.auto.parser.detect`'s rules), or None: not read
/// with certainty, or no rule matches (the Python path then decides).
#[pyfunction]
fn detect_format(raw: &[u8]) -> Option<&'static str> {
    detect::detect(raw)
}

/// `auto`'s format for any message: `"oms-avro"` when it is not JSON (after Python's
/// `bytes.lstrip()` it starts with none of `{`, `[`, `null`: the auto parser's first test), else
/// `detect_format`. One call per message instead of a Python-side test and a call.
#[pyfunction]
fn auto_format(raw: &[u8]) -> Option<&'static str> {
    decline::at(decline::Stage::Read); // undetected: a shape the detection does not read with certainty
    let start = raw.iter().position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)).unwrap_or(raw.len());
    let rest = &raw[start..];
    if !(rest.starts_with(b"{") || rest.starts_with(b"[") || rest.starts_with(b"null")) {
        return Some("oms-avro");
    }
    detect::detect(raw)
}

#[pymodule]
fn _kernel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("LaneFailed", m.py().get_type::<LaneFailed>())?;
    // The planners' kind codes by name, from their one definition: the unit tests compare
    // `plan.py`'s constants with it.
    let kind_codes = PyDict::new(m.py());
    for (name, code, _) in values::KIND_CODES {
        kind_codes.set_item(name, code)?;
    }
    m.add("KIND_CODES", kind_codes)?;
    let stages: Vec<&str> = decline::Stage::ALL.iter().map(|s| s.name()).collect();
    m.add("DECLINE_STAGES", stages)?;
    m.add_function(wrap_pyfunction!(last_decline, m)?)?;
    m.add_function(wrap_pyfunction!(detect_format, m)?)?;
    m.add_function(wrap_pyfunction!(render_json, m)?)?;
    m.add_function(wrap_pyfunction!(auto_format, m)?)?;
    m.add_class::<encode::Encoder>()?;
    m.add_class::<avro_decode::AvroDecoder>()?;
    m.add_class::<conversion::Conversion>()?;
    m.add_function(wrap_pyfunction!(conversion::py_describe, m)?)?;
    m.add_function(wrap_pyfunction!(conversion::convert_image, m)?)?;
    m.add_function(wrap_pyfunction!(conversion::py_bit_value, m)?)?;
    m.add_function(wrap_pyfunction!(sqltype::py_sql_type, m)?)?;
    m.add_function(wrap_pyfunction!(sqltype::py_jdbc_type_name, m)?)?;
    m.add_function(wrap_pyfunction!(encode::encode_columns, m)?)?;
    m.add_class::<CanalLane>()?;
    m.add_class::<MaxwellLane>()?;
    m.add_class::<DrsAvroLane>()?;
    m.add_class::<DebeziumLane>()?;
    m.add_class::<DebeziumSmtLane>()?;
    m.add_class::<OggLane>()?;
    m.add_class::<DrsJsonLane>()?;
    m.add_class::<KafkaRiverLane>()?;
    m.add_class::<CKafkaLane>()?;
    m.add_class::<OmsLane>()?;
    m.add_class::<OmsAvroLane>()?;
    Ok(())
}
