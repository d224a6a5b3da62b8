from g6.core import http
from g6.knowledge.knowledge_fetcher import FetchRequest, fetch


def answers(request):  # the network, in this example: no robots.txt, and the page refuses access
    if request.url.endswith("/robots.txt"):
        return http.Response(404, {}, b"", request.url)
    return http.Response(403, {"content-type": "text/html"}, b"<h1>Access denied</h1>", request.url)


def clients(adapter):
    return http.Client(transport=answers, resolver=lambda host, port: ["93.184.216.34"],
                       obey_robots=adapter.obey_robots)


found = fetch(FetchRequest(source="http", url="https://example.org/report"), clients=clients)
assert found.outcome == "blocked" and found.documents == []  # a 403 is a failure, never an empty page
