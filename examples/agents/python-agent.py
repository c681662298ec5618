# A complete rollgate agent: rollgate runner --gateway http://127.0.0.1:8080 -- python examples/agents/python-agent.py
import json, os, urllib.request
from openai import OpenAI

task = json.loads(os.environ["ROLLGATE_TASK"])  # e.g. {"question": "2+2?", "answer": "4"}
client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the runner
reply = client.chat.completions.create(model=os.environ.get("ROLLGATE_MODEL", "default"),
    messages=[{"role": "user", "content": str(task["question"])}]).choices[0].message.content or ""
reward = 1.0 if str(task["answer"]) in reply else 0.0
urllib.request.urlopen(urllib.request.Request(os.environ["ROLLGATE_REWARD_URL"], data=json.dumps({"value": reward}).encode(),
    headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})).read()
