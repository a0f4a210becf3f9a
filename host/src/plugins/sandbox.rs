//! The sandbox every plugin call runs in: a shared wasmtime engine with epoch interruption, a
//! fresh store per call holding exactly what the guest may reach (an empty WASI context, the
//! in-flight call's state, its capped log), a memory cap and a CPU deadline.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{Engine, ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::host_api::CallState;
use super::plugin_log::CallLog;

/// How often the epoch advances. A guest is checked against its deadline, and yields to the
/// executor (so the calls sharing the plugin threads take turns), this often; 10 ms keeps both
/// cheap and prompt.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Tables and instances a plugin may create: generous for any real component, small enough that
/// a hostile one cannot use them to exhaust host memory.
const MAX_TABLE_ELEMENTS: usize = 100_000;
const MAX_INSTANCES: usize = 100;

/// The limits of one plugin call, from `[plugins]`.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    pub memory_bytes: usize,
    pub deadline: Duration,
}

/// Caps a guest's memory and records whether the cap was hit, so the failure can say so.
pub struct Limiter {
    memory_bytes: usize,
    pub memory_denied: Arc<AtomicBool>,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.memory_bytes;
        if !allowed {
            self.memory_denied.store(true, Ordering::Relaxed);
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }
}

/// Time a call spent waiting on the host's own network work (creating a sub-task over A2A).
/// It is not the guest's CPU time, so it does not count against the call's deadline.
#[derive(Debug, Clone, Default)]
pub struct HostWait(Arc<Mutex<WaitClock>>);

#[derive(Debug, Default)]
struct WaitClock {
    total: Duration,
    since: Option<Instant>,
}

impl HostWait {
    /// Starts a wait; it ends when the guard is dropped.
    pub fn begin(&self) -> HostWaitGuard {
        self.lock().since = Some(Instant::now());
        HostWaitGuard(self.clone())
    }

    /// Time waited so far, the wait in progress included.
    pub fn total(&self) -> Duration {
        let clock = self.lock();
        clock.total + clock.since.map(|s| s.elapsed()).unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WaitClock> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Ends a [`HostWait`] when dropped.
pub struct HostWaitGuard(HostWait);

impl Drop for HostWaitGuard {
    fn drop(&mut self) {
        let mut clock = self.0.lock();
        if let Some(since) = clock.since.take() {
            clock.total += since.elapsed();
        }
    }
}

/// What a guest can reach: WASI with nothing granted, and the state of the call in flight.
pub struct StoreData {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: Limiter,
    /// Where the guest's `log` calls go, capped; it names the plugin.
    pub log: CallLog,
    /// The task effects of an `invoke`; `None` at start-up.
    pub call: Option<CallState>,
    /// Host network time during the call, excluded from its deadline.
    pub host_wait: HostWait,
}

impl WasiView for StoreData {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A component at most this big has its memory image copied into fresh memory at each
/// instantiation; a bigger one has it mapped copy-on-write. Copying a small image costs less
/// than mapping it and taking a page fault on every page the call touches (the builtin's plugin
/// call takes about a third less time); a big image (an interpreter's heap snapshot, tens of
/// MiB) would be copied whole on every call, so it is mapped and only the pages touched cost.
pub const COPY_INIT_MAX_BYTES: usize = 2 * 1024 * 1024;

/// The two engines plugins run on, alike but for how an instance's memory gets its image (see
/// [`COPY_INIT_MAX_BYTES`]); a plugin is compiled for one and always runs on it. Both are async
/// and epoch-interruptible, with one ticker thread that lives as long as either.
pub struct Engines {
    copying: Engine,
    mapping: Engine,
}

impl Engines {
    pub fn start() -> wasmtime::Result<Engines> {
        let engines = Engines {
            copying: engine(false)?,
            mapping: engine(true)?,
        };
        let tickers = [engines.copying.weak(), engines.mapping.weak()];
        std::thread::Builder::new()
            .name("plugin-epoch".into())
            .spawn(move || {
                loop {
                    let mut alive = false;
                    for ticker in &tickers {
                        if let Some(engine) = ticker.upgrade() {
                            engine.increment_epoch();
                            alive = true;
                        }
                    }
                    if !alive {
                        break;
                    }
                    std::thread::sleep(EPOCH_TICK);
                }
            })
            .map_err(|err| wasmtime::Error::msg(format!("cannot start the epoch ticker: {err}")))?;
        Ok(engines)
    }

    /// The engine that copies images, then the one that maps them.
    pub fn all(&self) -> [&Engine; 2] {
        [&self.copying, &self.mapping]
    }
}

/// Whether a component of `bytes` bytes runs on the engine that copies its memory image.
pub fn copies_image(bytes: usize) -> bool {
    bytes <= COPY_INIT_MAX_BYTES
}

fn engine(map_images: bool) -> wasmtime::Result<Engine> {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    config.memory_init_cow(map_images);
    Engine::new(&config)
}

/// A fresh store for one call. WASI is the default context: no files, no environment, no
/// arguments, sockets refused, standard streams discarded. The deadline counts from now, less the
/// time spent in the host's network work; past it the guest traps at its next epoch check, and
/// until then it yields every tick so one busy plugin never holds a plugin thread from the others.
pub fn store(
    engine: &Engine,
    log: CallLog,
    limits: CallLimits,
    call: Option<CallState>,
) -> Store<StoreData> {
    let data = StoreData {
        wasi: WasiCtx::builder().build(),
        table: ResourceTable::new(),
        limiter: Limiter {
            memory_bytes: limits.memory_bytes,
            memory_denied: Arc::new(AtomicBool::new(false)),
        },
        log,
        call,
        host_wait: HostWait::default(),
    };
    let mut store = Store::new(engine, data);
    store.limiter(|data| &mut data.limiter);
    let started = Instant::now();
    let deadline = limits.deadline;
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |ctx| {
        let guest_time = started
            .elapsed()
            .saturating_sub(ctx.data().host_wait.total());
        if guest_time >= deadline {
            Ok(UpdateDeadline::Interrupt)
        } else {
            Ok(UpdateDeadline::Yield(1))
        }
    });
    store
}
