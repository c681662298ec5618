# A complete rollgate agent: rollgate runner --gateway http://127.0.0.1:8080 -- python examples/agents/python-agent.py
# Standard library plus the rollgate client (pip install ./clients/python); any OpenAI client works as well.
from rollgate.agent import AgentContext

ctx = AgentContext.from_env()  # the task, the recorded model endpoint and the reward URL, set by the runner
task = ctx.task  # e.g. {"question": "2+2?", "answer": "4"}
reply = ctx.chat_text([{"role": "user", "content": str(task["question"])}], model=ctx.model or "default")
ctx.post_reward(1.0 if str(task["answer"]) in reply else 0.0)
