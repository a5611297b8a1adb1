"""The monitoring flow, Qt-free: what a source offers (`source.py`), the one sampling
thread (`sampler.py`), the pipeline that runs enrichers, the store and the listeners by
stage (`pipeline.py`), the monitor every front end runs (`monitor.py`), the headless
loop (`runner.py`), and work kept off the sampling thread (`background.py`,
`time_budget.py`). May import vramscope.core's vocabulary, store, detectors, session and
export; never vramscope.sources, vramscope.ui or Qt.
"""
