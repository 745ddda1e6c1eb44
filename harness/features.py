"""Names of the Spark capabilities a scenario may require (detected at run time by `eventtime.harness.compat`)."""

FEATURES = {
    "drop_duplicates_within_watermark": "DataFrame.dropDuplicatesWithinWatermark (Spark 3.5+)",
    "apply_in_pandas_with_state": "GroupedData.applyInPandasWithState (Spark 3.4+, needs pandas and pyarrow)",
    "transform_with_state": "transformWithStateInPandas with event-time timers (Spark 4.0+)",
    "multiple_stateful_operators": "chained stateful operators in append mode (Spark 3.4+)",
    "join_then_stateful": ("a time-interval stream-stream join followed by another stateful operator "
                           "(watermark propagation among operators, Spark 3.5+)"),
    "session_window_dynamic_gap": "session_window with a per-row gap expression (Spark 3.2+)",
    "state_reader": ("Spark's state data source, format('statestore') and format('state-metadata') (Spark 4.0+, "
                     "classic sessions; `state` checks need it)"),
    "trigger_once": "Trigger.Once, trigger(once=True) (deprecated since Spark 3.4; `run: once` needs it)",
    "pipelines": ("Spark Declarative Pipelines (pyspark.pipelines, Spark 4.1+) on a Spark Connect session, the "
                  "kit's staged sources taking Trigger.AvailableNow (pyspark's SupportsTriggerAvailableNow)"),
}
