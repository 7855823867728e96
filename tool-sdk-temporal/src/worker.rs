//! A worker: polls a task queue for the agent workflow's tasks and its activities'.

use std::time::Duration;

use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, Url};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use crate::error::TemporalError;
use crate::parts::AgentParts;
use crate::workflow::AgentWorkflow;

/// How long a workflow task waits for the worker that last ran the workflow (and holds it in
/// its cache) before any worker may take it. Short, so that a run whose worker died goes on
/// soon elsewhere (a live worker polls its sticky queue all the time and takes the task in
/// milliseconds); a live worker that misses it only replays the workflow from its history,
/// which holds ids and counts. The server rounds it up to its timer shift (see
/// [`RunOptions::heartbeat_timeout`](crate::RunOptions::heartbeat_timeout)).
const STICKY_TIMEOUT: Duration = Duration::from_millis(200);

/// A worker of the agent workflow and its activities on one task queue. Run any number, in
/// any processes on any hosts, with the same parts: each takes whatever task comes next.
pub struct AgentWorker {
    worker: Worker,
    // The worker's runtime: telemetry and the core's background tasks live as long as it.
    _runtime: Runtime,
}

impl AgentWorker {
    /// A worker of `task_queue` on the server at `address` (`host:port` or a URL), running
    /// the activities with `parts`: its config is built as `Agent::create` builds one (MCP
    /// servers connected), and what it asks that cannot run on Temporal is an error here.
    /// Must be called inside a Tokio runtime, which the worker then runs on.
    pub async fn connect(
        address: &str,
        task_queue: &str,
        parts: AgentParts,
    ) -> Result<AgentWorker, TemporalError> {
        let activities = parts.build().await?;
        let runtime = Runtime::from_current_tokio(Default::default())
            .map_err(|error| TemporalError::Worker(error.to_string()))?;
        let client = connect(address).await?;
        let options = WorkerOptions::new(task_queue)
            .sticky_queue_schedule_to_start_timeout(STICKY_TIMEOUT)
            // Heartbeats carry the model's text and the tools' progress to the client: the
            // activities pace them, the worker must not hold them back.
            .max_heartbeat_throttle_interval(crate::live::HEARTBEAT_THROTTLE)
            .register_workflow::<AgentWorkflow>()
            .map_err(|error| TemporalError::Worker(error.to_string()))?
            .register_activities(activities)
            .build();
        let worker = Worker::new(&runtime, client, options)
            .map_err(|error| TemporalError::Worker(error.to_string()))?;
        Ok(AgentWorker {
            worker,
            _runtime: runtime,
        })
    }

    /// A function that asks the worker to stop: it stops polling, and [`run`](Self::run)
    /// returns once its running tasks are done.
    pub fn shutdown_handle(&self) -> impl Fn() + Send + Sync + use<> {
        self.worker.shutdown_handle()
    }

    /// Polls and runs tasks until the worker is shut down. Its future is not `Send` (the
    /// workflows it runs stay on the thread that polls them): await it where the worker was
    /// made, such as in `main`, or in `tokio::task::spawn_local`.
    pub async fn run(mut self) -> Result<(), TemporalError> {
        self.worker
            .run()
            .await
            .map_err(|error| TemporalError::Worker(error.to_string()))
    }
}

/// A client of the server at `address`, in the default namespace.
pub(crate) async fn connect(address: &str) -> Result<Client, TemporalError> {
    let url = if address.contains("://") {
        address.to_owned()
    } else {
        format!("http://{address}")
    };
    let url = Url::parse(&url).map_err(|error| TemporalError::Address {
        address: address.to_owned(),
        reason: error.to_string(),
    })?;
    let failed = |reason: String| TemporalError::Connect {
        address: address.to_owned(),
        reason,
    };
    let options = ConnectionOptions::new(url)
        .connect_timeout(Duration::from_secs(10))
        .build();
    let connection = Connection::connect(options)
        .await
        .map_err(|error| failed(error.to_string()))?;
    Client::new(connection, ClientOptions::new("default").build())
        .map_err(|error| failed(error.to_string()))
}
