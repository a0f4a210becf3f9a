//! The sandbox every plugin call runs in: a shared wasmtime engine with epoch interruption, a
//! fresh store per call holding exactly what the guest may reach (an empty WASI context whose
//! standard streams are its log, wasi:http through its grant, the in-flight call's state, its
//! capped log), a memory cap and a CPU deadline.
//!
//! How it is fast: a component of at most `COPY_INIT_MAX_BYTES` (2 MiB) has its memory image
//! copied at each call into memory, tables and stack taken from a pooling allocator with a slot
//! per call in flight; a bigger one is mapped copy-on-write on an engine of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{
    Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter, Store,
    UpdateDeadline,
};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::call_state::CallState;
use super::grants::Grant;
use super::guest_output::{GuestOutput, SharedLog};
use super::outbound::Outbound;
use super::plugin_log::CallLog;

/// How often the epoch advances. A guest is checked against its deadline, and yields to the
/// executor (so the calls sharing the plugin threads take turns), this often; 10 ms keeps both
/// cheap and prompt. It also bounds how long a call holds its caller's thread before it moves to
/// the plugin threads (`threads`).
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Tables and instances a plugin may create: generous for any real component, small enough that
/// a hostile one cannot use them to exhaust host memory.
const MAX_TABLE_ELEMENTS: usize = 100_000;
const MAX_INSTANCES: usize = 100;

/// The limits of one plugin call, from `[plugins]`.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// The most linear memory a guest may grow to (`plugins.memory_mb`).
    pub memory_bytes: usize,
    /// How long one call may run before it is interrupted (`plugins.call_timeout_ms`).
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
    /// Where the guest's `log` calls and standard streams go, capped; it names the plugin.
    pub log: SharedLog,
    /// The task effects of an `invoke`; `None` at start-up.
    pub call: Option<CallState>,
    /// Host network time during the call, excluded from its deadline.
    pub host_wait: HostWait,
    /// The plugin's grant, for its settings (`config`); `None`: it has none.
    pub grant: Option<Arc<Grant>>,
    http: WasiHttpCtx,
    /// Sends the guest's HTTP requests, within its grant.
    outbound: Outbound,
}

impl WasiHttpView for StoreData {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.outbound,
        }
    }
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

/// What one instance on the copying engine may hold, at most. The pool that engine draws from
/// has room for this much per call slot, so a component within these bounds always finds a
/// slot; one beyond them fails to instantiate there, and is loaded on the mapping engine instead
/// (`PluginHost::load`).
/// Generous for any component a toolchain builds for one plugin (the builtin uses a handful).
pub const POOL_CORE_INSTANCES_PER_COMPONENT: u32 = 16;
pub const POOL_MEMORIES_PER_COMPONENT: u32 = 2;
pub const POOL_TABLES_PER_COMPONENT: u32 = 8;
/// How much of a pooled memory is set back to zeros with `memset` when its instance goes; past
/// this, pages are given back to the kernel (`madvise`), which on a multi-threaded process costs
/// an interrupt to every core running it. A small plugin's memory fits, so a call costs no
/// system call for its memory.
pub const POOL_MEMORY_KEEP_RESIDENT: usize = 2 * 1024 * 1024;
/// As [`POOL_MEMORY_KEEP_RESIDENT`], for a pooled table: the first elements a call touches are
/// set back with `memset`, so the next call takes no page fault on them.
pub const POOL_TABLE_KEEP_RESIDENT: usize = 64 * 1024;

/// The two engines plugins run on, alike but for where an instance's memory comes from (see
/// [`COPY_INIT_MAX_BYTES`]); a plugin is compiled for one and always runs on it. Both are async
/// and epoch-interruptible, with one ticker thread that lives as long as either.
///
/// The copying engine allocates from a pool sized for the calls that may run at once: memories,
/// tables and the stacks guest code runs on are taken from it and given back when the call ends,
/// reset to zeros, instead of being mapped and unmapped at every call (an unmap makes every
/// core drop its address translations, the largest single cost of a small call). Each call
/// still gets a fresh instance with its memory set from the component's image: nothing a call
/// leaves in memory reaches the next one.
pub struct Engines {
    copying: Engine,
    mapping: Engine,
}

/// How big the copying engine's pool is.
#[derive(Debug, Clone, Copy)]
pub struct PoolSize {
    /// Calls that may be inside plugins at once (`plugins.max_concurrent_calls`).
    pub calls: usize,
    /// The memory cap of one call (`plugins.memory_mb`).
    pub memory_bytes: usize,
}

impl Engines {
    pub fn start(pool: PoolSize) -> wasmtime::Result<Engines> {
        let engines = Engines {
            copying: engine(Some(pool))?,
            mapping: engine(None)?,
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

/// The copying engine (with its pool) when `pool` is given, else the mapping engine.
fn engine(pool: Option<PoolSize>) -> wasmtime::Result<Engine> {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    config.memory_init_cow(pool.is_none());
    if let Some(pool) = pool {
        // One slot more than the calls: the start-up calls run before any tool call.
        let slots = u32::try_from(pool.calls.saturating_add(1)).unwrap_or(u32::MAX);
        let mut pooling = PoolingAllocationConfig::new();
        pooling
            .total_component_instances(slots)
            .total_core_instances(slots.saturating_mul(POOL_CORE_INSTANCES_PER_COMPONENT))
            .max_core_instances_per_component(POOL_CORE_INSTANCES_PER_COMPONENT)
            .total_memories(slots.saturating_mul(POOL_MEMORIES_PER_COMPONENT))
            .max_memories_per_component(POOL_MEMORIES_PER_COMPONENT)
            .total_tables(slots.saturating_mul(POOL_TABLES_PER_COMPONENT))
            .max_tables_per_component(POOL_TABLES_PER_COMPONENT)
            .total_stacks(slots)
            .table_elements(MAX_TABLE_ELEMENTS)
            .max_memory_size(pool.memory_bytes)
            .linear_memory_keep_resident(POOL_MEMORY_KEEP_RESIDENT.min(pool.memory_bytes))
            .table_keep_resident(POOL_TABLE_KEEP_RESIDENT);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
    }
    Engine::new(&config)
}

/// A fresh store for one call. WASI is the default context: no files, no environment, no
/// arguments, sockets refused; standard output and error go to the log as the plugin's lines
/// (`guest_output`). HTTP goes only where `grant` lets it
/// (`None`: nowhere). The deadline counts from now, less the
/// time spent in the host's network work; past it the guest traps at its next epoch check, and
/// until then it yields every tick so one busy plugin never holds a plugin thread from the others.
pub fn store(
    engine: &Engine,
    log: CallLog,
    limits: CallLimits,
    call: Option<CallState>,
    grant: Option<Arc<Grant>>,
) -> Store<StoreData> {
    let outbound = Outbound {
        plugin: log.plugin().to_string(),
        // The network only in a tool call: start-up (`info`, `sections`, `tools`) reaches none.
        grant: grant.clone().filter(|_| call.is_some()),
        deadline: tokio::time::Instant::now() + limits.deadline,
    };
    let log: SharedLog = Arc::new(Mutex::new(log));
    let data = StoreData {
        wasi: WasiCtx::builder()
            .stdout(GuestOutput::stdout(log.clone()))
            .stderr(GuestOutput::stderr(log.clone()))
            .build(),
        table: ResourceTable::new(),
        limiter: Limiter {
            memory_bytes: limits.memory_bytes,
            memory_denied: Arc::new(AtomicBool::new(false)),
        },
        log,
        call,
        host_wait: HostWait::default(),
        grant,
        http: WasiHttpCtx::new(),
        outbound,
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
