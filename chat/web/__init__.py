"""The pages, a feature per subpackage, each with its views and `urls`
(included by `chat.web.urls`):

- `conversations`: the home page, a conversation, its settings, model
  picker and attachments;
- `sidebar`: the lists of conversations, folders and the search;
- `sharing`: shared links and the read-only pages they show;
- `teams`: a team's page and conversations, its management, invitations;
- `account`: signing in, the user's page, API keys, languages;
- `transfer`: export and import.

`bodies` gives the server the request bodies the pages take
(`chat.http.request_bodies`)."""
