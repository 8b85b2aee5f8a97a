# expect: DSY001 at line 50
# expect: DSY001 at line 52
"""A worker loop pairs with rank 0 only when rank 0's messages end it. This one stops on a
flag of its own that nothing sets, not on what it receives: the workers take rank 0's stop
for one more batch to score and wait in an all-reduce and a broadcast rank 0 never issues.
(The loop that stops on rank 0's command is quiet: quiet/workers_serve_commands_until_stop.py.)"""
import torch.distributed as dist

STOP = "stop"


def receive_command():
    box = [None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def send_command(command, payload=None):
    dist.broadcast_object_list([(command, payload)], src=0)


class EvalServer:
    def __init__(self, model):
        self.model = model
        self.stopped = False

    def score(self, batch):
        total = self.model(batch).float().sum()
        dist.all_reduce(total)
        return total

    def serve(self):
        while True:
            command, payload = receive_command()
            if self.stopped:
                return
            self.score(payload)

    def run(self, batches):
        scores = []
        for batch in batches:
            send_command("score", batch)
            scores.append(self.score(batch))
        send_command(STOP)
        return scores


def evaluate(model, batches):
    server = EvalServer(model)
    if dist.get_rank() != 0:
        server.serve()
        return None
    return server.run(batches)
