"""Migrations 0001 to 0022 in one: the models as they are now (made by
`makemigrations` on an empty folder: `squashmigrations` kept 235 of the 292
operations, 1,400 lines), then the search indexes of 0014 and 0022, made last.
A new database runs this one; a database that has applied some of 0001-0022
runs the rest of them. So the old files stay until every install has applied
them all (tests/models/test_migrations.py also goes back to 0007 and 0011
through them), and the search statements are theirs.

The schema it makes is 0001-0022's (pg_dump -s and SQLite's schema compared,
the order of the columns aside) but for the memberships' table, which 0008
made a model out of a many-to-many field's own table: there, that table keeps
its `bigint` id and a second unique constraint on (team, user) beside
`one_membership`; here it has the model's `integer` id and `one_membership`.
"""

from importlib import import_module

import chat.models.attachments
import chat.models.profiles
import django.db.models.deletion
import django.db.models.functions.text
import django.db.models.manager
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

_search = import_module("chat.migrations.0014_search_index")
_short_cjk = import_module("chat.migrations.0022_short_cjk_search")


class Migration(migrations.Migration):

    initial = True

    replaces = [
        ("chat", "0001_initial"),
        ("chat", "0002_defaults_history_slots"),
        ("chat", "0003_profiles_history_admission_sharing"),
        ("chat", "0004_message_version_of"),
        ("chat", "0005_message_page_index"),
        ("chat", "0006_message_replaced_chars"),
        ("chat", "0007_site_default_is_the_oldest_profile"),
        ("chat", "0008_identity_access_quotas"),
        ("chat", "0009_external_accounts"),
        ("chat", "0010_api_keys"),
        ("chat", "0011_message_written_by_asker"),
        ("chat", "0012_message_tree"),
        ("chat", "0013_sidebar_folders_imports"),
        ("chat", "0014_search_index"),
        ("chat", "0015_transfer_audit_kind"),
        ("chat", "0016_attachments"),
        ("chat", "0017_usersettings_language"),
        ("chat", "0018_verbose_names"),
        ("chat", "0019_settings_change_names"),
        ("chat", "0020_team_invitations_of_accounts"),
        ("chat", "0021_message_reserved_tokens"),
        ("chat", "0022_short_cjk_search"),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ModelProfile',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tag', models.CharField(help_text='Model name on the server, e.g. qwen3:14b', max_length=200, verbose_name='tag')),
                ('display_name', models.CharField(blank=True, max_length=200, verbose_name='display name')),
                ('backend', models.CharField(choices=[('ollama', 'Ollama'), ('openai', 'OpenAI-compatible')], default='ollama', max_length=10, verbose_name='backend')),
                ('base_url', models.CharField(help_text='e.g. http://gpu-box:11434', max_length=500, validators=[chat.models.profiles.validate_server_url], verbose_name='base url')),
                ('enabled', models.BooleanField(default=True, verbose_name='enabled')),
                ('is_demo', models.BooleanField(default=False, help_text='Served by the bundled simulator, not a real model.', verbose_name='is demo')),
                ('supports_thinking', models.BooleanField(default=False, verbose_name='supports thinking')),
                ('supports_vision', models.BooleanField(default=False, help_text="The model accepts images. Read from Ollama's capabilities; set it by hand for an OpenAI-compatible server.", verbose_name='supports vision')),
                ('image_max_side', models.PositiveIntegerField(default=1568, help_text='Images are downscaled so that their longer side is at most this many pixels before they are sent.', verbose_name='image max side')),
                ('context_length', models.PositiveIntegerField(default=4096, verbose_name='context length')),
                ('default_thinking', models.CharField(choices=[('on', 'On'), ('off', 'Off')], default='on', max_length=10, verbose_name='default thinking')),
                ('parallel_slots', models.PositiveIntegerField(default=0, help_text='Answers the server runs at once (e.g. OLLAMA_NUM_PARALLEL); more wait in a queue. 0 means no limit.', verbose_name='parallel slots')),
                ('default_history_policy', models.CharField(blank=True, choices=[('all', 'All messages'), ('last_n', 'Last N messages'), ('fit', "Fit the model's context"), ('none', 'None (each question alone)')], help_text='Blank: the site default.', max_length=10, verbose_name='default history policy')),
                ('default_history_last_n', models.PositiveIntegerField(blank=True, null=True, verbose_name='default history last n')),
                ('options', models.JSONField(blank=True, default=dict, help_text='Sampling options sent with every request.', verbose_name='options')),
                ('chars_per_token', models.FloatField(blank=True, help_text="Characters per token, measured from the server's prompt token counts; blank until the first answer (then about 4 is assumed).", null=True, verbose_name='chars per token')),
                ('keep_alive', models.CharField(blank=True, help_text='Ollama: how long the model stays loaded after an answer, e.g. "30m", "-1" (always). Blank: the server\'s default.', max_length=20, verbose_name='keep alive')),
                ('thinking_switch', models.CharField(choices=[('template', 'chat_template_kwargs.enable_thinking'), ('soft', '/think or /no_think after the question (Qwen3)'), ('both', 'Both'), ('none', "Nothing (the server's own default)")], default='template', help_text='OpenAI-compatible servers: how thinking is turned on and off.', max_length=10, verbose_name='thinking switch')),
                ('think_tags', models.CharField(choices=[('parse', 'Split <think>…</think> out of the answer'), ('close_only', 'Split; the answer may only close the tag'), ('off', 'Leave the answer as it is')], default='parse', help_text='OpenAI-compatible servers: reasoning inline in the answer. Qwen3-Thinking-2507 and DeepSeek-R1 only close the tag.', max_length=10, verbose_name='think tags')),
                ('family', models.CharField(blank=True, max_length=100, verbose_name='family')),
                ('parameter_size', models.CharField(blank=True, max_length=40, verbose_name='parameter size')),
                ('quantization', models.CharField(blank=True, max_length=40, verbose_name='quantization')),
                ('first_token_timeout', models.PositiveIntegerField(default=chat.models.profiles.default_first_token_timeout, help_text='Seconds to wait for the first token before giving up; a model still loading gets its load time on top.', verbose_name='first token timeout')),
            ],
            options={
                'verbose_name': 'model profile',
                'verbose_name_plural': 'model profiles',
                'ordering': ['display_name', 'tag'],
            },
        ),
        migrations.CreateModel(
            name='ApiKey',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100, verbose_name='name')),
                ('digest', models.CharField(editable=False, max_length=64, unique=True, verbose_name='digest')),
                ('shown', models.CharField(editable=False, max_length=20, verbose_name='shown')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('expires_at', models.DateTimeField(blank=True, null=True, verbose_name='expires at')),
                ('revoked_at', models.DateTimeField(blank=True, null=True, verbose_name='revoked at')),
                ('last_used_at', models.DateTimeField(blank=True, null=True, verbose_name='last used at')),
                ('last_used_from', models.GenericIPAddressField(blank=True, null=True, verbose_name='last used from')),
                ('store_conversations', models.BooleanField(default=False, help_text="Keep its answers as conversations in the owner's list (a request can also ask with the X-Chatsite-Store header).", verbose_name='store conversations')),
                ('revoked_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='revoked by')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to=settings.AUTH_USER_MODEL, verbose_name='user')),
                ('profiles', models.ManyToManyField(blank=True, help_text='Only these models. None: every model the owner may use.', related_name='+', to='chat.modelprofile', verbose_name='profiles')),
            ],
            options={
                'verbose_name': 'API key',
                'verbose_name_plural': 'API keys',
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='AuditEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('at', models.DateTimeField(auto_now_add=True, db_index=True, verbose_name='at')),
                ('kind', models.CharField(choices=[('sign_in', 'Signed in'), ('sign_in_failed', 'Sign-in failed'), ('sign_out', 'Signed out'), ('account_created', 'Account created'), ('invitation_created', 'Invitation created'), ('invitation_used', 'Invitation used'), ('password_changed', 'Password changed'), ('membership_changed', 'Team membership changed'), ('role_changed', 'Role changed'), ('access_changed', 'Model access changed'), ('quota_changed', 'Quota changed'), ('api_key_created', 'API key created'), ('api_key_revoked', 'API key revoked'), ('data_exported', 'Conversations exported')], max_length=20, verbose_name='kind')),
                ('username', models.CharField(blank=True, max_length=150, verbose_name='username')),
                ('address', models.CharField(blank=True, max_length=45, verbose_name='address')),
                ('method', models.CharField(blank=True, help_text='password, oidc, ldap, invitation', max_length=10, verbose_name='method')),
                ('detail', models.JSONField(blank=True, default=dict, verbose_name='detail')),
                ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='actor')),
                ('subject', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='subject')),
            ],
            options={
                'verbose_name': 'audit event',
                'verbose_name_plural': 'audit events',
                'ordering': ['-at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='Folder',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=80, verbose_name='name')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='folders', to=settings.AUTH_USER_MODEL, verbose_name='owner')),
            ],
            options={
                'verbose_name': 'folder',
                'verbose_name_plural': 'folders',
                'ordering': [django.db.models.functions.text.Lower('name'), 'pk'],
            },
        ),
        migrations.CreateModel(
            name='Conversation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('title', models.CharField(blank=True, max_length=200, verbose_name='title')),
                ('thinking', models.CharField(choices=[('default', 'Model default'), ('on', 'On'), ('off', 'Off')], default='default', max_length=10, verbose_name='thinking')),
                ('system_prompt', models.TextField(blank=True, verbose_name='system prompt')),
                ('history_policy', models.CharField(blank=True, choices=[('all', 'All messages'), ('last_n', 'Last N messages'), ('fit', "Fit the model's context"), ('none', 'None (each question alone)')], max_length=10, verbose_name='history policy')),
                ('history_last_n', models.PositiveIntegerField(blank=True, null=True, verbose_name='history last n')),
                ('temperature', models.FloatField(blank=True, null=True, verbose_name='temperature')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                ('listed', models.BooleanField(default=True, verbose_name='listed')),
                ('pinned_at', models.DateTimeField(blank=True, null=True, verbose_name='pinned at')),
                ('archived_at', models.DateTimeField(blank=True, null=True, verbose_name='archived at')),
                ('imported_from', models.CharField(blank=True, max_length=20, verbose_name='imported from')),
                ('import_key', models.CharField(blank=True, max_length=200, verbose_name='import key')),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='conversations', to=settings.AUTH_USER_MODEL, verbose_name='owner')),
                ('folder', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='conversations', to='chat.folder', verbose_name='folder')),
                ('model_profile', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='chat.modelprofile', verbose_name='model profile')),
            ],
            options={
                'verbose_name': 'conversation',
                'verbose_name_plural': 'conversations',
                'ordering': ['-updated_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='Membership',
            fields=[
                ('id', models.AutoField(primary_key=True, serialize=False, verbose_name='id')),
                ('role', models.CharField(choices=[('member', 'Member'), ('admin', 'Team admin')], default='member', max_length=6, verbose_name='role')),
                ('synced', models.BooleanField(default=False, help_text='Added by a sign-in group rule.', verbose_name='synced')),
                ('joined_at', models.DateTimeField(blank=True, default=django.utils.timezone.now, null=True, verbose_name='joined at')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL, verbose_name='user')),
            ],
            options={
                'verbose_name': 'membership',
                'verbose_name_plural': 'memberships',
                'db_table': 'chat_team_members',
            },
        ),
        migrations.CreateModel(
            name='Message',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('user', 'User'), ('assistant', 'Assistant')], max_length=10, verbose_name='role')),
                ('content', models.TextField(blank=True, verbose_name='content')),
                ('thinking', models.TextField(blank=True, verbose_name='thinking')),
                ('status', models.CharField(choices=[('streaming', 'Streaming'), ('done', 'Done'), ('stopped', 'Stopped'), ('error', 'Error'), ('interrupted', 'Interrupted')], default='done', max_length=12, verbose_name='status')),
                ('error_code', models.CharField(blank=True, max_length=40, verbose_name='error code')),
                ('error_detail', models.TextField(blank=True, verbose_name='error detail')),
                ('client_id', models.CharField(blank=True, max_length=64, verbose_name='client id')),
                ('model_tag', models.CharField(blank=True, max_length=200, verbose_name='model tag')),
                ('thinking_enabled', models.BooleanField(null=True, verbose_name='thinking enabled')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                ('queue_wait_ms', models.FloatField(null=True, verbose_name='queue wait ms')),
                ('first_token_ms', models.FloatField(null=True, verbose_name='first token ms')),
                ('first_answer_token_ms', models.FloatField(null=True, verbose_name='first answer token ms')),
                ('thinking_ms', models.FloatField(null=True, verbose_name='thinking ms')),
                ('total_ms', models.FloatField(null=True, verbose_name='total ms')),
                ('prompt_tokens', models.PositiveIntegerField(null=True, verbose_name='prompt tokens')),
                ('prompt_eval_ms', models.FloatField(null=True, verbose_name='prompt eval ms')),
                ('output_tokens', models.PositiveIntegerField(null=True, verbose_name='output tokens')),
                ('eval_ms', models.FloatField(null=True, verbose_name='eval ms')),
                ('load_ms', models.FloatField(null=True, verbose_name='load ms')),
                ('done_reason', models.CharField(blank=True, max_length=20, verbose_name='done reason')),
                ('reserved_tokens', models.PositiveIntegerField(default=0, verbose_name='reserved tokens')),
                ('replaced_chars', models.PositiveIntegerField(default=0, verbose_name='replaced chars')),
                ('history_sent', models.PositiveIntegerField(null=True, verbose_name='history sent')),
                ('history_total', models.PositiveIntegerField(null=True, verbose_name='history total')),
                ('prompt_tokens_estimate', models.PositiveIntegerField(null=True, verbose_name='prompt tokens estimate')),
                ('context_tokens', models.PositiveIntegerField(null=True, verbose_name='context tokens')),
                ('prompt_chars', models.PositiveIntegerField(null=True, verbose_name='prompt chars')),
                ('source', models.CharField(choices=[('chat', 'Chat'), ('api', 'API')], default='chat', max_length=4, verbose_name='source')),
                ('written_by_asker', models.BooleanField(default=False, verbose_name='written by asker')),
                ('replaced', models.BooleanField(default=False, verbose_name='replaced')),
                ('shown_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='shown at')),
                ('api_key', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='messages', to='chat.apikey', verbose_name='api key')),
                ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='chat.conversation', verbose_name='conversation')),
                ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='children', to='chat.message', verbose_name='parent')),
            ],
            options={
                'verbose_name': 'message',
                'verbose_name_plural': 'messages',
                'ordering': ['pk'],
            },
            managers=[
                ('shown', django.db.models.manager.Manager()),
            ],
        ),
        migrations.CreateModel(
            name='Attachment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('public_id', models.CharField(default=chat.models.attachments.new_public_id, max_length=32, unique=True, verbose_name='public id')),
                ('storage_name', models.CharField(max_length=255, verbose_name='storage name')),
                ('thumbnail_name', models.CharField(blank=True, max_length=255, verbose_name='thumbnail name')),
                ('name', models.CharField(max_length=255, verbose_name='name')),
                ('size', models.PositiveBigIntegerField(verbose_name='size')),
                ('content_type', models.CharField(max_length=120, verbose_name='content type')),
                ('kind', models.CharField(choices=[('image', 'Image'), ('document', 'Document')], max_length=10, verbose_name='kind')),
                ('text', models.TextField(blank=True, verbose_name='text')),
                ('sent_chars', models.PositiveIntegerField(blank=True, null=True, verbose_name='sent chars')),
                ('tokens', models.PositiveIntegerField(default=0, verbose_name='tokens')),
                ('width', models.PositiveIntegerField(blank=True, null=True, verbose_name='width')),
                ('height', models.PositiveIntegerField(blank=True, null=True, verbose_name='height')),
                ('sha256', models.CharField(max_length=64, verbose_name='sha256')),
                ('note', models.CharField(blank=True, max_length=200, verbose_name='note')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='attachments', to=settings.AUTH_USER_MODEL, verbose_name='owner')),
                ('conversation', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='attachments', to='chat.conversation', verbose_name='conversation')),
                ('message', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='attachments', to='chat.message', verbose_name='message')),
            ],
            options={
                'verbose_name': 'attachment',
                'verbose_name_plural': 'attachments',
                'ordering': ['pk'],
            },
        ),
        migrations.CreateModel(
            name='SettingsChange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('text', models.CharField(max_length=1000, verbose_name='text')),
                ('changed', models.JSONField(blank=True, default=list, verbose_name='settings changed')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='settings_changes', to='chat.conversation', verbose_name='conversation')),
            ],
            options={
                'verbose_name': 'settings change',
                'verbose_name_plural': 'settings changes',
                'ordering': ['created_at', 'pk'],
            },
        ),
        migrations.CreateModel(
            name='ShareLink',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token_digest', models.CharField(editable=False, max_length=64, unique=True, verbose_name='token digest')),
                ('token_hint', models.CharField(editable=False, max_length=8, verbose_name='token hint')),
                ('mode', models.CharField(choices=[('snapshot', 'Snapshot'), ('live', 'Live')], default='snapshot', max_length=10, verbose_name='mode')),
                ('snapshot_upto', models.BigIntegerField(blank=True, editable=False, null=True, verbose_name='snapshot upto')),
                ('include_thinking', models.BooleanField(default=False, verbose_name='include thinking')),
                ('include_attachments', models.BooleanField(default=True, verbose_name='include attachments')),
                ('expires_at', models.DateTimeField(blank=True, null=True, verbose_name='expires at')),
                ('revoked_at', models.DateTimeField(blank=True, null=True, verbose_name='revoked at')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to='chat.conversation', verbose_name='conversation')),
                ('created_by', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to=settings.AUTH_USER_MODEL, verbose_name='created by')),
            ],
            options={
                'verbose_name': 'share link',
                'verbose_name_plural': 'share links',
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='Team',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100, unique=True, verbose_name='name')),
                ('quota_period', models.CharField(choices=[('day', 'Per day (UTC)'), ('month', 'Per month (UTC)')], default='day', max_length=5, verbose_name='quota period')),
                ('team_output_tokens', models.PositiveIntegerField(default=0, help_text='Output tokens the whole team may use. 0: no limit.', verbose_name='team output tokens')),
                ('team_answers', models.PositiveIntegerField(default=0, help_text='Answers the whole team may get. 0: no limit.', verbose_name='team answers')),
                ('member_output_tokens', models.PositiveIntegerField(default=0, help_text='Output tokens each member may use. 0: no limit.', verbose_name='member output tokens')),
                ('member_answers', models.PositiveIntegerField(default=0, help_text='Answers each member may get. 0: no limit.', verbose_name='member answers')),
                ('conversations', models.ManyToManyField(blank=True, related_name='shared_with_teams', to='chat.conversation', verbose_name='conversations')),
                ('members', models.ManyToManyField(blank=True, related_name='teams', through='chat.Membership', to=settings.AUTH_USER_MODEL, verbose_name='members')),
            ],
            options={
                'verbose_name': 'team',
                'verbose_name_plural': 'teams',
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='SiteDefaults',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('default_thinking', models.CharField(choices=[('default', 'Model default'), ('on', 'On'), ('off', 'Off')], default='default', max_length=10, verbose_name='default thinking')),
                ('default_history_policy', models.CharField(choices=[('all', 'All messages'), ('last_n', 'Last N messages'), ('fit', "Fit the model's context"), ('none', 'None (each question alone)')], default='all', max_length=10, verbose_name='default history policy')),
                ('default_history_last_n', models.PositiveIntegerField(default=20, verbose_name='default history last n')),
                ('generations_per_user', models.PositiveIntegerField(default=3, help_text='Answers one user may have running at once; more wait in a queue. 0 means no limit.', verbose_name='generations per user')),
                ('quota_period', models.CharField(choices=[('day', 'Per day (UTC)'), ('month', 'Per month (UTC)')], default='day', max_length=5, verbose_name='quota period')),
                ('user_output_tokens', models.PositiveIntegerField(default=0, help_text='Output tokens each user may use per period, whatever their teams. 0: no limit.', verbose_name='user output tokens')),
                ('user_answers', models.PositiveIntegerField(default=0, help_text='Answers each user may get per period. 0: no limit.', verbose_name='user answers')),
                ('share_requires_sign_in', models.BooleanField(default=False, help_text='Shared links open only for signed-in users.', verbose_name='share requires sign in')),
                ('api_enabled', models.BooleanField(default=True, help_text='People may create personal API keys and use the OpenAI- and Ollama-compatible API. Off: every key is refused at once.', verbose_name='API access')),
                ('default_profile', models.ForeignKey(blank=True, help_text='Blank: the oldest enabled model profile. A new profile becomes the default only when chosen here.', null=True, on_delete=django.db.models.deletion.SET_NULL, to='chat.modelprofile', verbose_name='default profile')),
                ('api_teams', models.ManyToManyField(blank=True, help_text='Only members of these teams may use the API. None: everyone.', related_name='+', to='chat.team', verbose_name='API for teams')),
            ],
            options={
                'verbose_name': 'site defaults',
                'verbose_name_plural': 'site defaults',
            },
        ),
        migrations.AddField(
            model_name='modelprofile',
            name='teams',
            field=models.ManyToManyField(blank=True, help_text='Only members of these teams may use the model. None: everyone.', related_name='profiles', to='chat.team', verbose_name='teams'),
        ),
        migrations.AddField(
            model_name='membership',
            name='team',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='chat.team', verbose_name='team'),
        ),
        migrations.CreateModel(
            name='Invitation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token_hash', models.CharField(editable=False, max_length=64, unique=True, verbose_name='token hash')),
                ('email', models.EmailField(blank=True, help_text='Only this address may use it. Blank: anyone with the link.', max_length=254, verbose_name='email')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('expires_at', models.DateTimeField(verbose_name='expires at')),
                ('used_at', models.DateTimeField(blank=True, null=True, verbose_name='used at')),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='invitations_made', to=settings.AUTH_USER_MODEL, verbose_name='created by')),
                ('invitee', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='team_invitations', to=settings.AUTH_USER_MODEL, verbose_name='invitee')),
                ('used_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='used by')),
                ('team', models.ForeignKey(blank=True, help_text='The invitee joins this team.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='invitations', to='chat.team', verbose_name='team')),
            ],
            options={
                'verbose_name': 'invitation',
                'verbose_name_plural': 'invitations',
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='GroupRule',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('group', models.CharField(help_text="The group's name as the provider sends it (an OpenID Connect claim's value; an LDAP group's cn or its full DN). Compared exactly.", max_length=500, verbose_name='group')),
                ('source', models.CharField(choices=[('any', 'Any provider'), ('oidc', 'OpenID Connect'), ('ldap', 'LDAP')], default='any', max_length=4, verbose_name='source')),
                ('team_role', models.CharField(choices=[('member', 'Member'), ('admin', 'Team admin')], default='member', max_length=6, verbose_name='team role')),
                ('makes_staff', models.BooleanField(default=False, help_text='Members of the group are staff (admins).', verbose_name='makes staff')),
                ('team', models.ForeignKey(blank=True, help_text='Members of the group are members of this team.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='group_rules', to='chat.team', verbose_name='team')),
            ],
            options={
                'verbose_name': 'sign-in group rule',
                'verbose_name_plural': 'sign-in group rules',
                'ordering': ['group'],
            },
        ),
        migrations.CreateModel(
            name='Ticket',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('served', models.PositiveBigIntegerField(db_index=True, null=True, verbose_name='served')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('message', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='ticket', to='chat.message', verbose_name='message')),
                ('profile', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to='chat.modelprofile', verbose_name='profile')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to=settings.AUTH_USER_MODEL, verbose_name='user')),
            ],
            options={
                'verbose_name': 'ticket',
                'verbose_name_plural': 'tickets',
                'ordering': ['pk'],
            },
        ),
        migrations.CreateModel(
            name='UserSettings',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('display_name', models.CharField(blank=True, max_length=150, verbose_name='display name')),
                ('theme', models.CharField(choices=[('system', 'As the system'), ('light', 'Light'), ('dark', 'Dark')], default='system', max_length=6, verbose_name='theme')),
                ('language', models.CharField(blank=True, choices=[('', 'As the browser'), ('en', 'English'), ('zh-hans', '简体中文')], default='', max_length=7, verbose_name='language')),
                ('default_profile', models.ForeignKey(blank=True, help_text="New conversations start with this model. Blank: the site's.", null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='chat.modelprofile', verbose_name='default profile')),
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='chat_settings', to=settings.AUTH_USER_MODEL, verbose_name='user')),
            ],
            options={
                'verbose_name': 'user settings',
                'verbose_name_plural': 'user settings',
            },
        ),
        migrations.CreateModel(
            name='ExternalAccount',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('method', models.CharField(max_length=10, verbose_name='method')),
                ('subject', models.CharField(max_length=255, verbose_name='subject')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('last_sign_in', models.DateTimeField(blank=True, null=True, verbose_name='last sign in')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='external_accounts', to=settings.AUTH_USER_MODEL, verbose_name='user')),
            ],
            options={
                'verbose_name': 'external account',
                'verbose_name_plural': 'external accounts',
                'constraints': [models.UniqueConstraint(fields=('method', 'subject'), name='one_account_per_identity')],
            },
        ),
        migrations.AddConstraint(
            model_name='folder',
            constraint=models.UniqueConstraint(models.F('owner'), django.db.models.functions.text.Lower('name'), name='folder_name_unique_per_owner'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(fields=['status', 'updated_at'], name='chat_messag_status_431a9a_idx'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(fields=['created_at'], name='chat_messag_created_b6b51c_idx'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(fields=['conversation', 'replaced', 'id'], name='chat_messag_convers_d5a37b_idx'),
        ),
        migrations.AddIndex(
            model_name='conversation',
            index=models.Index(fields=['owner', 'listed', 'archived_at', '-updated_at', '-id'], name='conversation_sidebar'),
        ),
        migrations.AddConstraint(
            model_name='conversation',
            constraint=models.UniqueConstraint(condition=models.Q(('import_key', ''), _negated=True), fields=('owner', 'import_key'), name='conversation_import_once'),
        ),
        migrations.AddConstraint(
            model_name='modelprofile',
            constraint=models.UniqueConstraint(fields=('base_url', 'tag'), name='unique_profile_per_server'),
        ),
        migrations.AddConstraint(
            model_name='membership',
            constraint=models.UniqueConstraint(fields=('team', 'user'), name='one_membership'),
        ),
        # Full-text search (0014) once every table is made: on SQLite nothing
        # after it makes chat_message anew, so its triggers stay (0021 had to
        # make them again after such a rebuild).
        migrations.RunPython(
            _search._run(
                {"postgresql": _search.POSTGRES_FORWARD, "sqlite": _search.SQLITE_FORWARD}
            ),
            _search._run(
                {
                    "postgresql": _search.POSTGRES_BACKWARD,
                    "sqlite": _search.SQLITE_BACKWARD,
                }
            ),
        ),
        # The CJK grams index of short searches on PostgreSQL (0022).
        migrations.RunPython(
            _search._run({"postgresql": _short_cjk.POSTGRES_FORWARD}),
            _search._run({"postgresql": _short_cjk.POSTGRES_BACKWARD}),
        ),
    ]
