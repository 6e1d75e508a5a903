//! OPA's WebAssembly ABI, host side (openpolicyagent.org/docs/wasm): the
//! module imports its memory and five builtin dispatchers; values cross as
//! JSON text the module parses (`opa_json_parse`) and writes
//! (`opa_json_dump`) in its own heap; an evaluation sets a context's input,
//! data and entrypoint and calls `eval`.
//!
//! Written here rather than taken from a crate: opa-wasm (matrix-org), the
//! maintained Rust implementation, resolves builtins from its own table,
//! which leaves eight of the 23 Kubewarden offers unimplemented and formats
//! `sprintf` with C's verbs, not Go's (`%v` fails), and takes no builtins
//! from outside; a policy would decide otherwise than on policy-server.

use std::sync::Arc;

use serde_json::Value;
use wasmtime::{AsContextMut, Caller, Engine, Instance, Linker, Memory, Module, Store, TypedFunc};

use super::builtins::Builtin;
use crate::limits::{self, Limiter, Limits};

/// The module's `opa_malloc` and `opa_json_parse`, which put a JSON
/// document in its heap.
type Parsing<'f> = (&'f TypedFunc<i32, i32>, &'f TypedFunc<(i32, i32), i32>);

/// The builtins a module calls, by the number it gives each.
pub(super) type Dispatch = Vec<(i32, String, Builtin)>;

pub(super) struct State {
    dispatch: Arc<Dispatch>,
    limiter: Limiter,
}

/// An instance of an OPA module, its `data` loaded.
pub(super) struct Abi {
    store: Store<State>,
    memory: Memory,
    functions: Functions,
    /// The heap as instantiated, and after the data: an evaluation's values
    /// are dropped by setting the heap back.
    base_heap: i32,
    data_heap: i32,
    data: i32,
    /// The epoch ticks each evaluation may run for.
    ticks: u64,
}

#[derive(Clone)]
struct Functions {
    builtins: TypedFunc<(), i32>,
    entrypoints: TypedFunc<(), i32>,
    heap_get: TypedFunc<(), i32>,
    heap_set: TypedFunc<i32, ()>,
    context_new: TypedFunc<(), i32>,
    set_input: TypedFunc<(i32, i32), ()>,
    set_data: TypedFunc<(i32, i32), ()>,
    set_entrypoint: TypedFunc<(i32, i32), ()>,
    result: TypedFunc<i32, i32>,
    dump: TypedFunc<i32, i32>,
    malloc: TypedFunc<i32, i32>,
    parse: TypedFunc<(i32, i32), i32>,
    eval: TypedFunc<i32, i32>,
}

/// A call that failed, in a line; one interrupted at its deadline in
/// burrego's words, which `rego.rs` tells apart.
fn failed(what: &str, error: wasmtime::Error) -> String {
    match limits::interrupted(&error) {
        true => format!("{what}: {}", crate::REGO_TIMEOUT),
        false => format!("{what}: {error:#}"),
    }
}

impl Abi {
    /// Instantiates `module`; its builtins are dispatched as `dispatch`
    /// says (a call to one it does not name fails the evaluation).
    pub(super) fn new(
        engine: &Engine,
        module: &Module,
        dispatch: Arc<Dispatch>,
        limits: &Limits,
    ) -> Result<Abi, String> {
        let limiter = limits.limiter();
        let mut store = Store::new(engine, State { dispatch, limiter });
        store.limiter(|state| &mut state.limiter);
        store.set_epoch_deadline(limits.ticks());
        let memory_type = module
            .imports()
            .find(|import| import.module() == "env" && import.name() == "memory")
            .and_then(|import| import.ty().memory().cloned())
            .ok_or("not an OPA module: it imports no env.memory")?;
        let memory = Memory::new(&mut store, memory_type).map_err(|e| failed("its memory", e))?;
        let mut linker: Linker<State> = Linker::new(engine);
        link(&mut linker, &store, memory)
            .map_err(|e| failed("not an OPA module: its imports", e))?;
        let instance = linker
            .instantiate(&mut store, module)
            .map_err(|e| failed("cannot instantiate the OPA module", e))?;
        let functions = Functions::of(&instance, &mut store)?;
        let mut abi = Abi {
            store,
            memory,
            functions,
            base_heap: 0,
            data_heap: 0,
            data: 0,
            ticks: limits.ticks(),
        };
        abi.load_data(b"{}")?;
        Ok(abi)
    }

    /// The builtins the module calls, by name, with their numbers.
    pub(super) fn builtins(&mut self) -> Result<Vec<(String, i32)>, String> {
        let at = self.call0(self.functions.builtins.clone(), "builtins")?;
        self.numbered(at, "builtins")
    }

    /// The module's entrypoints, by name, with their numbers.
    pub(super) fn entrypoints(&mut self) -> Result<Vec<(String, i32)>, String> {
        let at = self.call0(self.functions.entrypoints.clone(), "entrypoints")?;
        self.numbered(at, "entrypoints")
    }

    fn call0(&mut self, function: TypedFunc<(), i32>, name: &str) -> Result<i32, String> {
        function
            .call(&mut self.store, ())
            .map_err(|e| failed(&format!("calling {name}"), e))
    }

    fn numbered(&mut self, at: i32, name: &str) -> Result<Vec<(String, i32)>, String> {
        let map = pull(&mut self.store, &self.memory, &self.functions.dump, at)?;
        let map = map
            .as_object()
            .ok_or_else(|| format!("not an OPA module: {name} is no object"))?;
        map.iter()
            .map(|(name, id)| {
                id.as_i64()
                    .and_then(|id| i32::try_from(id).ok())
                    .map(|id| (name.clone(), id))
                    .ok_or_else(|| format!("not an OPA module: {name} has no number"))
            })
            .collect()
    }

    /// Whether the cap refused the module memory (or a table) since it
    /// was instantiated.
    pub(super) fn refused(&self) -> bool {
        self.store.data().limiter.refused
    }

    /// Loads `data` (JSON text) for the evaluations that follow.
    pub(super) fn load_data(&mut self, data: &[u8]) -> Result<(), String> {
        self.store.set_epoch_deadline(self.ticks);
        let heap_set = self.functions.heap_set.clone();
        if self.base_heap == 0 {
            self.base_heap = self.call0(self.functions.heap_get.clone(), "opa_heap_ptr_get")?;
        }
        heap_set
            .call(&mut self.store, self.base_heap)
            .map_err(|e| failed("opa_heap_ptr_set", e))?;
        let f = &self.functions;
        self.data = push(&mut self.store, &self.memory, (&f.malloc, &f.parse), data)?;
        self.data_heap = self.call0(self.functions.heap_get.clone(), "opa_heap_ptr_get")?;
        Ok(())
    }

    /// Evaluates `entrypoint` on `input` (JSON text): the result set.
    pub(super) fn evaluate(&mut self, entrypoint: i32, input: &[u8]) -> Result<Value, String> {
        self.store.set_epoch_deadline(self.ticks);
        let f = self.functions.clone();
        let store = &mut self.store;
        f.heap_set
            .call(&mut *store, self.data_heap)
            .map_err(|e| failed("opa_heap_ptr_set", e))?;
        let input = push(&mut *store, &self.memory, (&f.malloc, &f.parse), input)?;
        let context = f
            .context_new
            .call(&mut *store, ())
            .map_err(|e| failed("opa_eval_ctx_new", e))?;
        f.set_input
            .call(&mut *store, (context, input))
            .and_then(|()| f.set_data.call(&mut *store, (context, self.data)))
            .and_then(|()| f.set_entrypoint.call(&mut *store, (context, entrypoint)))
            .map_err(|e| failed("setting up the evaluation", e))?;
        let status = f
            .eval
            .call(&mut *store, context)
            .map_err(|e| failed("evaluating the policy", e))?;
        if status != 0 {
            return Err(format!("evaluating the policy: eval returned {status}"));
        }
        let result = f
            .result
            .call(&mut *store, context)
            .map_err(|e| failed("opa_eval_ctx_get_result", e))?;
        pull(&mut *store, &self.memory, &f.dump, result)
    }
}

impl Functions {
    fn of(instance: &Instance, store: &mut Store<State>) -> Result<Functions, String> {
        macro_rules! function {
            ($name:literal) => {
                instance
                    .get_typed_func(&mut *store, $name)
                    .map_err(|e| failed(concat!("not an OPA module: ", $name), e))?
            };
        }
        Ok(Functions {
            builtins: function!("builtins"),
            entrypoints: function!("entrypoints"),
            heap_get: function!("opa_heap_ptr_get"),
            heap_set: function!("opa_heap_ptr_set"),
            context_new: function!("opa_eval_ctx_new"),
            set_input: function!("opa_eval_ctx_set_input"),
            set_data: function!("opa_eval_ctx_set_data"),
            set_entrypoint: function!("opa_eval_ctx_set_entrypoint"),
            result: function!("opa_eval_ctx_get_result"),
            dump: function!("opa_json_dump"),
            malloc: function!("opa_malloc"),
            parse: function!("opa_json_parse"),
            eval: function!("eval"),
        })
    }
}

/// `text`, a JSON document, parsed in the module's heap: its value's
/// address.
fn push(
    mut store: impl AsContextMut<Data = State>,
    memory: &Memory,
    (malloc, parse): Parsing<'_>,
    text: &[u8],
) -> Result<i32, String> {
    let length = i32::try_from(text.len()).map_err(|_| "a JSON document over 2 GiB".to_string())?;
    let at = malloc
        .call(&mut store, length)
        .map_err(|e| failed("opa_malloc", e))?;
    let offset = usize::try_from(at).map_err(|_| "opa_malloc answered a negative address")?;
    memory
        .write(&mut store, offset, text)
        .map_err(|e| format!("opa_malloc answered outside memory: {e}"))?;
    let value = parse
        .call(&mut store, (at, length))
        .map_err(|e| failed("opa_json_parse", e))?;
    match value {
        0 => Err("the module could not parse a JSON document".to_string()),
        value => Ok(value),
    }
}

/// The value at `at`, dumped by the module as JSON text and read.
fn pull(
    mut store: impl AsContextMut<Data = State>,
    memory: &Memory,
    dump: &TypedFunc<i32, i32>,
    at: i32,
) -> Result<Value, String> {
    let text = dump
        .call(&mut store, at)
        .map_err(|e| failed("opa_json_dump", e))?;
    let text =
        c_string(memory.data(&store), text).ok_or("opa_json_dump answered outside memory")?;
    serde_json::from_slice(text).map_err(|e| format!("opa_json_dump wrote no JSON: {e}"))
}

/// The NUL-terminated string at `at`.
pub(super) fn c_string(memory: &[u8], at: i32) -> Option<&[u8]> {
    let start = usize::try_from(at).ok()?;
    let rest = memory.get(start..)?;
    let end = rest.iter().position(|b| *b == 0)?;
    Some(&rest[..end])
}

/// The module's imports: its memory, `opa_abort` (a failed evaluation),
/// `opa_println`, and the dispatchers of builtins of 0 to 4 arguments.
fn link(linker: &mut Linker<State>, store: &Store<State>, memory: Memory) -> wasmtime::Result<()> {
    linker.define(store, "env", "memory", memory)?;
    linker.func_wrap(
        "env",
        "opa_abort",
        move |caller: Caller<'_, State>, at: i32| -> wasmtime::Result<()> {
            let message = c_string(memory.data(&caller), at).unwrap_or_default();
            Err(wasmtime::Error::msg(format!(
                "opa_abort: {}",
                String::from_utf8_lossy(message)
            )))
        },
    )?;
    linker.func_wrap(
        "env",
        "opa_println",
        move |caller: Caller<'_, State>, at: i32| {
            if std::env::var_os("POLICY_HOST_LOG").is_some() {
                let message = c_string(memory.data(&caller), at).unwrap_or_default();
                eprintln!("guest print: {}", String::from_utf8_lossy(message));
            }
        },
    )?;
    linker.func_wrap(
        "env",
        "opa_builtin0",
        move |caller: Caller<'_, State>, id: i32, _context: i32| builtin(caller, memory, id, &[]),
    )?;
    linker.func_wrap(
        "env",
        "opa_builtin1",
        move |caller: Caller<'_, State>, id: i32, _context: i32, a: i32| {
            builtin(caller, memory, id, &[a])
        },
    )?;
    linker.func_wrap(
        "env",
        "opa_builtin2",
        move |caller: Caller<'_, State>, id: i32, _context: i32, a: i32, b: i32| {
            builtin(caller, memory, id, &[a, b])
        },
    )?;
    linker.func_wrap(
        "env",
        "opa_builtin3",
        move |caller: Caller<'_, State>, id: i32, _context: i32, a: i32, b: i32, c: i32| {
            builtin(caller, memory, id, &[a, b, c])
        },
    )?;
    linker.func_wrap(
        "env",
        "opa_builtin4",
        move |caller: Caller<'_, State>, id: i32, _context: i32, a: i32, b: i32, c: i32, d: i32| {
            builtin(caller, memory, id, &[a, b, c, d])
        },
    )?;
    Ok(())
}

/// A builtin the module calls: its arguments dumped to JSON, computed,
/// and its result parsed into the module's heap.
fn builtin(
    mut caller: Caller<'_, State>,
    memory: Memory,
    id: i32,
    arguments: &[i32],
) -> wasmtime::Result<i32> {
    let dispatch = caller.data().dispatch.clone();
    let (name, function) = dispatch
        .iter()
        .find(|(number, _, _)| *number == id)
        .map(|(_, name, function)| (name.as_str(), *function))
        .ok_or_else(|| wasmtime::Error::msg(format!("Builtin not implemented: {id}")))?;
    let export = |caller: &mut Caller<'_, State>, name: &str| {
        caller
            .get_export(name)
            .and_then(|export| export.into_func())
            .ok_or_else(|| wasmtime::Error::msg(format!("the OPA module exports no {name}")))
    };
    let dump: TypedFunc<i32, i32> = export(&mut caller, "opa_json_dump")?.typed(&caller)?;
    let malloc: TypedFunc<i32, i32> = export(&mut caller, "opa_malloc")?.typed(&caller)?;
    let parse: TypedFunc<(i32, i32), i32> =
        export(&mut caller, "opa_json_parse")?.typed(&caller)?;
    let mut values = Vec::with_capacity(arguments.len());
    for at in arguments {
        values.push(pull(&mut caller, &memory, &dump, *at).map_err(wasmtime::Error::msg)?);
    }
    let _ = name;
    let result = function(&values).map_err(wasmtime::Error::msg)?;
    let text = serde_json::to_vec(&result).expect("JSON values serialize");
    push(&mut caller, &memory, (&malloc, &parse), &text).map_err(wasmtime::Error::msg)
}
