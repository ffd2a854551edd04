//! `corebench._engine`: the load engine as a Python extension module. The
//! config arrives as JSON (built and validated by the Python side), the
//! result leaves as JSON; engine errors become Python exceptions here.

use std::sync::mpsc;
use std::time::Duration;

use corebench_engine::{run_with, Control, EngineError, LoadConfig};
use corebench_serve::{ServeConfig, ServeError};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(_engine, EngineFailure, PyException, "The engine failed (a bug or a resource limit).");
create_exception!(_engine, UsageError, EngineFailure, "The load configuration is wrong: the message says how.");

/// Both crates' errors say whether the user can fix them.
trait Blame: std::fmt::Display {
    fn is_user_error(&self) -> bool;
}

impl Blame for EngineError {
    fn is_user_error(&self) -> bool {
        EngineError::is_user_error(self)
    }
}

impl Blame for ServeError {
    fn is_user_error(&self) -> bool {
        ServeError::is_user_error(self)
    }
}

/// A user's mistake is a UsageError (a message); anything else a failure.
fn py_err(e: &impl Blame) -> PyErr {
    if e.is_user_error() {
        UsageError::new_err(e.to_string())
    } else {
        EngineFailure::new_err(e.to_string())
    }
}

fn to_py(e: EngineError) -> PyErr {
    let err = py_err(&e);
    // The setting at fault, so the caller can name its flag or plan key.
    if let EngineError::BadConfig { key, .. } = &e {
        Python::attach(|py| err.value(py).setattr("key", *key)).ok();
    }
    err
}

fn serve_to_py(e: ServeError) -> PyErr {
    py_err(&e)
}

/// Runs one load. The GIL is released while the engine works; Ctrl-C (or any
/// pending signal) stops the run, which then returns what it measured with
/// `"interrupted": true`.
/// `progress`, when given, is called about four times a second with the
/// number of requests finished so far (for live displays); returning
/// `False` stops the run as Ctrl-C does. `live`, when given, is called as
/// often with a dict of the run's figures so far (see `live_figures`).
#[pyfunction]
#[pyo3(signature = (config_json, body=None, progress=None, live=None))]
fn run(
    py: Python<'_>,
    config_json: &str,
    body: Option<Vec<u8>>,
    progress: Option<Bound<'_, PyAny>>,
    live: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let config = load_config(config_json, body)?;
    let (mut result, signalled) = drive(py, progress, live, |control| run_with(&config, control))?;
    result.run.interrupted |= signalled;
    serde_json::to_string(&result).map_err(|e| EngineFailure::new_err(e.to_string()))
}

/// Runs one agent's share (`config["agent"]`) of a distributed load and
/// returns its part (JSON) for `merge`; otherwise as `run`.
#[pyfunction]
#[pyo3(signature = (config_json, body=None, progress=None))]
fn run_agent(
    py: Python<'_>,
    config_json: &str,
    body: Option<Vec<u8>>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let config = load_config(config_json, body)?;
    let (mut part, signalled) = drive(py, progress, None, |control| corebench_engine::run_agent(&config, control))?;
    part.run.interrupted |= signalled;
    serde_json::to_string(&part).map_err(|e| EngineFailure::new_err(e.to_string()))
}

/// Checks a load's config as a run would before its first request (the
/// settings, the target's address, the workload) without running it.
#[pyfunction]
fn check(py: Python<'_>, config_json: &str) -> PyResult<()> {
    let config = load_config(config_json, None)?;
    // Through `drive`: reading a log of gigabytes stops on Ctrl-C.
    drive(py, None, None, |control| corebench_engine::check(&config, control)).map(|_| ())
}

/// Merges the agents' parts (JSON strings from `run_agent`) of the load
/// `config_json` describes into one result (JSON).
#[pyfunction]
fn merge(py: Python<'_>, config_json: &str, parts: Vec<String>) -> PyResult<String> {
    let config = load_config(config_json, None)?;
    let parts = parts
        .iter()
        .map(|p| serde_json::from_str(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EngineFailure::new_err(format!("an agent part that does not parse: {e}")))?;
    let result = py.detach(|| corebench_engine::merge(&config, parts)).map_err(to_py)?;
    serde_json::to_string(&result).map_err(|e| EngineFailure::new_err(e.to_string()))
}

fn load_config(config_json: &str, body: Option<Vec<u8>>) -> PyResult<LoadConfig> {
    let mut config: LoadConfig =
        serde_json::from_str(config_json).map_err(|e| UsageError::new_err(format!("load config: {e}")))?;
    config.body = body.unwrap_or_default();
    Ok(config)
}

/// Runs `work` on its own thread with the GIL released, watching for
/// signals and calling `progress` and `live` meanwhile. Also says whether
/// a signal came: one handled after the workers had ended (while the result
/// was summarized) stops nothing in them, and its KeyboardInterrupt is
/// consumed here, so the caller must mark the result interrupted or the
/// signal is lost (a capacity search went on to its end, CI, 28 Nov 2026).
fn drive<T: Send>(
    py: Python<'_>,
    progress: Option<Bound<'_, PyAny>>,
    live: Option<Bound<'_, PyAny>>,
    work: impl FnOnce(&Control) -> Result<T, EngineError> + Send,
) -> PyResult<(T, bool)> {
    let control = Control::default();
    // The signal's own exception (KeyboardInterrupt), kept: raised in place
    // of the error of work that it cut short.
    let mut signal: Option<PyErr> = None;
    let outcome = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        // A Mutex makes the receiver shareable with the GIL-free closure.
        let rx = std::sync::Mutex::new(rx);
        let ctl = &control;
        scope.spawn(move || {
            let _ = tx.send(work(ctl));
        });
        let mut ticks = 0u32;
        loop {
            match py.detach(|| rx.lock().expect("single user").recv_timeout(Duration::from_millis(50))) {
                Ok(outcome) => return outcome,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        signal.get_or_insert(e);
                        control.stop();
                    }
                    ticks += 1;
                    if ticks.is_multiple_of(5) {
                        let said = [
                            progress.as_ref().map_or(Going::On, |cb| keep_going(py, cb, control.finished())),
                            live.as_ref().map_or(Going::On, |cb| match live_figures(py, &control) {
                                Ok(figures) => keep_going(py, cb, figures),
                                Err(_) => Going::On,
                            }),
                        ];
                        if said.contains(&Going::Signalled) && signal.is_none() {
                            signal = Some(pyo3::exceptions::PyKeyboardInterrupt::new_err(()));
                        }
                        if said.iter().any(|g| matches!(g, Going::Stop | Going::Signalled)) {
                            control.stop();
                        } else if said.contains(&Going::Settled) {
                            control.settle();
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(EngineError::WorkerPanic("the load thread ended without a result".into()))
                }
            }
        }
    });
    match outcome {
        Ok(t) => Ok((t, signal.is_some())),
        Err(e) => Err(signal.unwrap_or_else(|| to_py(e))),
    }
}

/// The run's figures so far, for a live display: `finished` and `failed`
/// requests, and `unsuccessful` responses (a status other than 2xx or
/// 3xx); once the load has started, `elapsed_s` and what the run is to
/// do, `requests` and `length_s` (each None when not bounded by it); and
/// `second`, the last whole second's `second` (its index), `completed`,
/// `errors`, `p50_us` and `p99_us` (None before the first second is over).
fn live_figures<'py>(py: Python<'py>, control: &Control) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use pyo3::types::PyDict;
    let d = PyDict::new(py);
    d.set_item("finished", control.finished())?;
    d.set_item("failed", control.failed())?;
    d.set_item("unsuccessful", control.unsuccessful())?;
    let plan = control.plan();
    d.set_item("elapsed_s", plan.map(|p| p.start.elapsed().as_secs_f64()))?;
    d.set_item("requests", plan.and_then(|p| p.requests))?;
    d.set_item("length_s", plan.and_then(|p| p.length_s))?;
    let second = match control.last_second() {
        Some(s) => {
            let sd = PyDict::new(py);
            sd.set_item("second", s.second)?;
            sd.set_item("completed", s.completed)?;
            sd.set_item("errors", s.errors)?;
            sd.set_item("p50_us", s.p50_us)?;
            sd.set_item("p99_us", s.p99_us)?;
            sd.set_item("over", s.over.to_vec())?;
            Some(sd)
        }
        None => None,
    };
    d.set_item("second", second)?;
    Ok(d)
}

/// Calls a progress callback; false when it asks the run to stop (it
/// returned False, or a Ctrl-C arrived while it ran). A failing display
/// must not end the run.
fn keep_going<'py>(py: Python<'py>, cb: &Bound<'py, PyAny>, arg: impl IntoPyObject<'py>) -> Going {
    match cb.call1((arg,)) {
        Ok(v) if v.is_instance_of::<pyo3::types::PyBool>() && !v.is_truthy().unwrap_or(true) => Going::Stop,
        Ok(v) if v.extract::<&str>().is_ok_and(|s| s == SETTLED) => Going::Settled,
        Ok(_) => Going::On,
        // A signal handled while the callback ran: its KeyboardInterrupt ends here.
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => Going::Signalled,
        Err(_) => Going::On,
    }
}

/// What a progress or live callback asked for: returning False stops the
/// run (interrupted), returning "settled" ends it whole as far as it went.
#[derive(PartialEq)]
enum Going {
    On,
    Stop,
    Settled,
    Signalled,
}

const SETTLED: &str = "settled";

/// Runs the built-in target server until SIGTERM or SIGINT. Prints one line
/// to stderr when it is ready: `corebench serve: listening on http://ADDR/ …`
/// (`https://` with `tls`).
#[pyfunction]
fn serve(py: Python<'_>, config_json: &str) -> PyResult<()> {
    let config: ServeConfig =
        serde_json::from_str(config_json).map_err(|e| UsageError::new_err(format!("serve config: {e}")))?;
    corebench_serve::install_signal_handlers();
    let ready = |addr: std::net::SocketAddr| {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "corebench serve: listening on {}://{addr}/ (model {}, {} workers)",
            if config.tls { "https" } else { "http" },
            config.model.name(),
            config.workers
        );
        let _ = err.flush();
    };
    py.detach(|| corebench_serve::serve(&config, &corebench_serve::SIGNALLED, &ready)).map_err(serve_to_py)
}

/// The JSON Schema of the load configuration: every setting, its default and
/// its limits, as the engine defines them.
#[pyfunction]
fn load_config_schema() -> String {
    corebench_engine::load_config_schema()
}

/// The JSON Schema of a load's result as the engine writes it.
#[pyfunction]
fn load_result_schema() -> String {
    corebench_engine::load_result_schema()
}

/// None when the load threads can run on io_uring here; else why not.
#[pyfunction]
fn io_uring_unavailable() -> Option<String> {
    corebench_engine::io_uring_support().err()
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_agent, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(load_config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(load_result_schema, m)?)?;
    m.add_function(wrap_pyfunction!(io_uring_unavailable, m)?)?;
    m.add("UsageError", m.py().get_type::<UsageError>())?;
    m.add("EngineFailure", m.py().get_type::<EngineFailure>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("RESULT_SCHEMA", corebench_engine::result::SCHEMA)?;
    m.add("PART_SCHEMA", corebench_engine::PART_SCHEMA)?;
    m.add("LINGER_MIN_IN_FLIGHT", corebench_engine::LINGER_MIN_IN_FLIGHT)?;
    m.add("MAX_LIVE_BOUNDS", corebench_engine::MAX_LIVE_BOUNDS)?;
    Ok(())
}
