"""Building LangGraph agents the same way on every langgraph release the tests run on.

The oldest claimed stack (langchain-core 0.3.0, whose newest langgraph is 0.2.x; see
scripts/sdk-matrix.sh) predates ``create_react_agent(prompt=, name=)`` and
``StateGraph.compile(name=)``: there the system prompt is ``state_modifier`` and the name
is the run name of the graph's config, which is where LangGraph takes the run's name
from on every release.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from langgraph.graph import StateGraph

with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.0, still shipped
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

_REACT = inspect.signature(create_react_agent).parameters
_COMPILE = inspect.signature(StateGraph.compile).parameters


def react_agent(model: Any, tools: Any, *, prompt: str, name: str) -> Any:
    """LangGraph's prebuilt ReAct agent with a system prompt and a name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the 1.x deprecation, warned on each call
        if "prompt" in _REACT and "name" in _REACT:
            return create_react_agent(model, tools, prompt=prompt, name=name)
        return create_react_agent(model, tools, state_modifier=prompt).with_config(run_name=name)


def compiled(graph: StateGraph[Any], name: str) -> Any:
    """``graph`` compiled under ``name``."""
    if "name" in _COMPILE:
        return graph.compile(name=name)
    return graph.compile().with_config(run_name=name)
